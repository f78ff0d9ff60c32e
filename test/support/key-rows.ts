import { createSecretKey } from 'node:crypto';
import type pg from 'pg';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key-format.js';
import { TEST_API_KEY_SECRET } from './seed.js';

/**
 * Writes a key row the way minting would (real format, real keyed hash under the test
 * API_KEY_SECRET) but with any scopes, for states the API cannot produce: a key that lacks
 * `decisions:read` (minting with [] always gives read).
 */
export async function insertApiKeyRow(pool: pg.Pool, row: { userId: string; orgId: string; scopes: string[]; name?: string }): Promise<string> {
  const generated = generateApiKey();
  const hash = hashApiKey(createSecretKey(Buffer.from(TEST_API_KEY_SECRET, 'utf8')), generated.key);
  await pool.query(
    `INSERT INTO api_keys (user_id, org_id, name, lookup, last4, key_hash, scopes) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [row.userId, row.orgId, row.name ?? '', generated.lookup, generated.last4, hash, row.scopes],
  );
  return generated.key;
}
