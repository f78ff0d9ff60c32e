import { createSecretKey, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key-format.js';
import { TEST_API_KEY_SECRET } from './seed.js';

const TEST_KEY_SECRET = createSecretKey(Buffer.from(TEST_API_KEY_SECRET, 'utf8'));

/** One key row to write; everything but the owner has the value minting would give. */
export interface KeyRowOptions {
  userId: string;
  orgId: string;
  /** Default `['decisions:read']`; any list, for states the API cannot produce (minting with [] always gives read). */
  scopes?: string[];
  name?: string;
  id?: string;
  createdAt?: Date;
  expiresAt?: Date | null;
  revokedAt?: Date | null;
  last4?: string;
  /** How the key is hashed for storage: by default the keyed hash under the test API_KEY_SECRET; another function plants a row the service must refuse. */
  hash?: (key: string) => Buffer;
}

/** A written row and the key it answers to. */
export interface KeyRow {
  id: string;
  key: string;
  lookup: string;
  last4: string;
}

/** The keyed hash the service stores for `key` under the test API_KEY_SECRET. */
export const testKeyHash = (key: string): Buffer => hashApiKey(TEST_KEY_SECRET, key);

/**
 * Writes key rows the way minting would (real format, real keyed hash under the test
 * API_KEY_SECRET), in one statement, for states the API cannot produce or cannot produce
 * quickly: any scopes, past creation times, expired or revoked keys, a thousand keys at once.
 */
export async function insertKeyRows(pool: pg.Pool, rows: KeyRowOptions[]): Promise<KeyRow[]> {
  const written = rows.map((r) => {
    const generated = generateApiKey();
    return {
      options: r,
      id: r.id ?? randomUUID(),
      key: generated.key,
      lookup: generated.lookup,
      last4: r.last4 ?? generated.last4,
    };
  });
  const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
  await pool.query(
    `INSERT INTO api_keys (id, user_id, org_id, name, lookup, last4, key_hash, scopes, created_at, expires_at, revoked_at)
     SELECT r.id, r.user_id, r.org_id, r.name, r.lookup, r.last4, decode(r.key_hash, 'hex'), r.scopes,
            COALESCE(r.created_at, now()), r.expires_at, r.revoked_at
       FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, user_id uuid, org_id uuid, name text, lookup text, last4 text, key_hash text,
                                               scopes text[], created_at timestamptz, expires_at timestamptz, revoked_at timestamptz)`,
    [
      JSON.stringify(
        written.map(({ options: o, id, key, lookup, last4 }) => ({
          id,
          user_id: o.userId,
          org_id: o.orgId,
          name: o.name ?? '',
          lookup,
          last4,
          key_hash: (o.hash ?? testKeyHash)(key).toString('hex'),
          scopes: o.scopes ?? ['decisions:read'],
          created_at: iso(o.createdAt),
          expires_at: iso(o.expiresAt),
          revoked_at: iso(o.revokedAt),
        })),
      ),
    ],
  );
  return written.map(({ id, key, lookup, last4 }) => ({ id, key, lookup, last4 }));
}

/** Writes one key row (see `insertKeyRows`). */
export async function insertKeyRow(pool: pg.Pool, row: KeyRowOptions): Promise<KeyRow> {
  return (await insertKeyRows(pool, [row]))[0];
}
