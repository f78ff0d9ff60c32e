import { keyEventDataSql } from '../events/event-types.js';

/**
 * One window of the expiry scan: marks up to $5 keys due by $1 (`$2`: already expired; else
 * expiring after $7, so a key inside a nearer window is warned by that one only) with mark $4,
 * and writes their `$6` events at $3. The mark makes each (key, window) emitted once, whichever
 * instance's scan gets there first.
 */
export const EXPIRY_BATCH_SQL = `WITH due AS (
         SELECT k.* FROM api_keys k
          WHERE k.revoked_at IS NULL AND k.expires_at IS NOT NULL AND k.expires_at <= $1
            AND ($2::boolean OR k.expires_at > $7)
            AND NOT EXISTS (SELECT 1 FROM event_marks m WHERE m.kind = 'key_expiry' AND m.subject = k.id::text AND m.mark = $4)
          ORDER BY k.expires_at LIMIT $5),
       marked AS (
         INSERT INTO event_marks (kind, subject, mark) SELECT 'key_expiry', id::text, $4 FROM due
         ON CONFLICT DO NOTHING RETURNING subject),
       e AS (
         INSERT INTO event_outbox (org_id, type, data, created_at)
         SELECT d.org_id, $6, ${keyEventDataSql('d')} || jsonb_build_object('window', $4::text), $3
           FROM due d JOIN marked mk ON mk.subject = d.id::text)
       SELECT subject FROM marked`;
