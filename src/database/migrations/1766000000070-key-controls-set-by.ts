import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * A key's `controls_set_by`: who set each of its controls that is set, `{ "<control>": "owner" |
 * "admin" }` (docs/key-controls.md); null: none set. Keys that already carry controls are given
 * what the audit log says: a service key's controls are an admin's (only admins manage them); a
 * personal key's control is an admin's when its latest `api_key.updated` naming it was made by
 * someone other than the key's owner (an org owner or admin, or the operator), else its owner's
 * (set at mint or by the owner's own PATCH). One pass over the audit log, not one per key.
 */
export class KeyControlsSetBy1766000000070 implements MigrationInterface {
  name = 'KeyControlsSetBy1766000000070';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE api_keys ADD COLUMN controls_set_by jsonb`);
    await q.query(`
      WITH latest AS (
        SELECT DISTINCT ON (a.target_id, c.control) a.target_id AS key_id, c.control, a.actor_type, a.actor_id
          FROM audit_events a CROSS JOIN LATERAL jsonb_array_elements_text(
                 CASE WHEN jsonb_typeof(a.details->'changed') = 'array' THEN a.details->'changed' ELSE '[]'::jsonb END) c(control)
         WHERE a.action = 'api_key.updated' AND a.target_type = 'api_key'
         ORDER BY a.target_id, c.control, a.created_at DESC),
      present AS (
        SELECT k.id, c.control,
               CASE WHEN k.created_by IS NOT NULL
                      OR (l.key_id IS NOT NULL AND (l.actor_type <> 'user' OR l.actor_id IS DISTINCT FROM k.user_id))
                    THEN 'admin' ELSE 'owner' END AS set_by
          FROM api_keys k
          CROSS JOIN LATERAL (VALUES ('enabled', NOT k.enabled), ('rate_limits', k.rate_limits IS NOT NULL),
                                     ('credits', k.credits_remaining IS NOT NULL), ('allowed_cidrs', k.allowed_cidrs IS NOT NULL),
                                     ('metadata', k.metadata IS NOT NULL)) c(control, is_set)
          LEFT JOIN latest l ON l.key_id = k.id AND l.control = c.control
         WHERE c.is_set)
      UPDATE api_keys k SET controls_set_by = s.set_by
        FROM (SELECT id, jsonb_object_agg(control, set_by) AS set_by FROM present GROUP BY id) s
       WHERE k.id = s.id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE api_keys DROP COLUMN controls_set_by`);
  }
}
