import { Transactions } from '../../src/database/transactions.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyWriteRepository, type NewApiKey } from '../../src/api-keys/api-key-write.repository.js';
import { ApiKeyRepository } from '../../src/api-keys/api-key.repository.js';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { openRepositoryDatabase, type RepositoryDatabase } from '../support/factories.js';

/** A key's settings written at mint (both mint paths) and by the settings UPDATE, on real PostgreSQL. */
describe('key settings in the key store', () => {
  let r: RepositoryDatabase;
  let writes: ApiKeyWriteRepository;
  let keys: ApiKeyRepository;
  const NOW = new Date('2031-06-01T12:00:00.000Z');
  const SETTINGS = {
    enabled: false,
    rate_limits: [{ name: 'default', limit: 10, window_seconds: 1 }],
    credits_remaining: 5,
    credits_refill: { amount: 5, interval: 'daily' },
    credits_period: '2031-06-01T00:00:00.000Z',
    allowed_cidrs: ['203.0.113.0/24'],
    metadata: { team: 'batch' },
  };

  beforeAll(async () => {
    r = await openRepositoryDatabase();
    writes = new ApiKeyWriteRepository(r.source, new Transactions(r.source));
    keys = new ApiKeyRepository(r.source);
  });
  afterAll(async () => r?.close());

  function newKey(o: { userId: string; orgId: string }): NewApiKey {
    const g = generateApiKey();
    return {
      id: randomUUID(),
      userId: o.userId,
      orgId: o.orgId,
      name: 'k',
      lookup: g.lookup,
      last4: g.last4,
      keyHash: randomBytes(32),
      scopes: ['decisions:read'],
      createdAt: NOW,
      expiresAt: null,
      settings: SETTINGS,
    };
  }
  const stored = async (id: string) =>
    (
      await r.db.pool.query(
        `SELECT enabled, rate_limits, credits_remaining::int AS credits, credits_refill, credits_period, allowed_cidrs, metadata FROM api_keys WHERE id = $1`,
        [id],
      )
    ).rows[0];
  const expected = {
    enabled: false,
    rate_limits: SETTINGS.rate_limits,
    credits: 5,
    credits_refill: SETTINGS.credits_refill,
    credits_period: new Date(SETTINGS.credits_period),
    allowed_cidrs: SETTINGS.allowed_cidrs,
    metadata: SETTINGS.metadata,
  };

  it('writes them with the key on the one-statement path', async () => {
    const w = await r.seed.world('owner');
    const key = newKey(w);
    expect(await writes.mintWithinCap({ key, audit: null, event: null }, 10)).not.toBeNull();
    expect(await stored(key.id)).toEqual(expected);
  });

  it('writes them with the key on the exact path (a count that is wrong)', async () => {
    const w = await r.seed.world('owner');
    await r.db.pool.query(`INSERT INTO api_key_counts (user_id, org_id, unrevoked) VALUES ($1, $2, 10)`, [
      w.userId,
      w.orgId,
    ]);
    const key = newKey(w);
    expect(await writes.mintWithinCap({ key, audit: null, event: null }, 10)).not.toBeNull();
    expect(await stored(key.id)).toEqual(expected);
  });

  it('changes only the settings named, in the scope given, moving the credits epoch with a credits change', async () => {
    const w = await r.seed.world('owner');
    const key = newKey(w);
    await writes.mintWithinCap({ key, audit: null, event: null }, 10);
    expect(await keys.updateSettings('user_id', randomUUID(), key.id, { enabled: true })).toBeNull();
    const updated = await keys.updateSettings('org_id', w.orgId, key.id, {
      enabled: true,
      credits_remaining: 9,
      credits_refill: null,
      credits_period: null,
      metadata: null,
    });
    expect(updated).toMatchObject({
      enabled: true,
      creditsRemaining: '9',
      creditsRefill: null,
      creditsEpoch: 1,
      metadata: null,
      allowedCidrs: SETTINGS.allowed_cidrs,
    });
  });
});
