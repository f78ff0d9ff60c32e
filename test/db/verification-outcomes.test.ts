import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyVerificationStore } from '../../src/api-keys/api-key-verification.store.js';
import { VerificationOutcomeRepository } from '../../src/api-keys/verification-outcome.repository.js';
import type { OutcomeCounts } from '../../src/auth/api-key-store.js';
import { VERIFICATION_OUTCOMES, type Outcome } from '../../src/auth/verification-outcome-recorder.js';
import { postgresOptions } from '../../src/database/data-source-options.js';
import { pgPool } from '../../src/database/pg-pool.js';
import { TestClock } from '../support/clock.js';
import { createSeededDatabase, insertKeyRows, type TestDatabase } from '../support/factories.js';
import type { Seeder } from '../support/seed.js';
import { testConfig } from '../support/test-config.js';

/**
 * The verification outcomes' statements on real PostgreSQL, without the app: the one-statement
 * write of a batch (ApiKeyVerificationStore.recordOutcomes), the reads by hour and UTC day for a
 * key and an org, and the retention's deletes. The database's sessions run in a time zone far
 * from UTC (+14), so every hour and day here is UTC because the statements make it so.
 */
const counts = (of: Partial<Record<Outcome, number>>) => VERIFICATION_OUTCOMES.map((o) => of[o] ?? 0);
const full = (of: Partial<Record<Outcome, number>>) =>
  Object.fromEntries(VERIFICATION_OUTCOMES.map((o) => [o, of[o] ?? 0])) as Record<Outcome, number>;
const row = (keyId: string, hour: string, of: Partial<Record<Outcome, number>>): OutcomeCounts => ({
  keyId,
  hour: new Date(hour),
  counts: counts(of),
});

describe('verification outcomes in PostgreSQL', () => {
  let db: TestDatabase;
  let seed: Seeder;
  let sources: DataSource[];
  let store: ApiKeyVerificationStore;
  let outcomes: VerificationOutcomeRepository;
  let orgId: string;
  let otherOrgId: string;
  let keys: string[];
  let otherKey: string;

  beforeAll(async () => {
    ({ db, seed } = await createSeededDatabase());
    await db.pool.query(
      `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET TimeZone = %L', current_database(), 'Pacific/Kiritimati'); END $$`,
    );
    // Two instances' pools, opened after the time zone is set, as the server opens its own.
    sources = await Promise.all(
      [0, 1].map(() => new DataSource(postgresOptions(testConfig(db.url), db.url)).initialize()),
    );
    store = new ApiKeyVerificationStore(sources[0], new TestClock('2031-05-02T12:00:00Z'));
    outcomes = new VerificationOutcomeRepository(sources[0]);
    const owner = await seed.world('owner');
    orgId = owner.orgId;
    const other = await seed.world('owner');
    otherOrgId = other.orgId;
    keys = (
      await insertKeyRows(
        db.pool,
        [0, 1, 2].map(() => ({ userId: owner.userId, orgId })),
      )
    ).map((k) => k.id);
    [otherKey] = (await insertKeyRows(db.pool, [{ userId: other.userId, orgId: otherOrgId }])).map((k) => k.id);
  });
  afterAll(async () => {
    await Promise.all((sources ?? []).map((s) => s.destroy()));
    await db?.drop();
  });

  it('writes a batch in one statement, adding to the stored hours and UTC days; a key deleted since is skipped', async () => {
    const [k] = keys;
    const query = vi.spyOn(pgPool(sources[0]), 'query');
    await store.recordOutcomes([
      row(k, '2031-05-01T22:00:00Z', { valid: 5, rate_limited: 1 }),
      row(k, '2031-05-01T23:00:00Z', { valid: 2 }),
      row(k, '2031-05-02T00:00:00Z', { insufficient_scope: 3 }),
      row(randomUUID(), '2031-05-01T22:00:00Z', { valid: 9 }),
    ]);
    expect(query).toHaveBeenCalledTimes(1);
    await store.recordOutcomes([row(k, '2031-05-01T22:00:00Z', { valid: 1, revoked: 4 })]);
    query.mockRestore();

    expect(await outcomes.buckets('hour', 'key_id', k, '2031-05-01', '2031-05-02')).toEqual([
      { start: new Date('2031-05-01T22:00:00Z'), ...full({ valid: 6, rate_limited: 1, revoked: 4 }) },
      { start: new Date('2031-05-01T23:00:00Z'), ...full({ valid: 2 }) },
      { start: new Date('2031-05-02T00:00:00Z'), ...full({ insufficient_scope: 3 }) },
    ]);
    expect(await outcomes.buckets('day', 'key_id', k, '2031-05-01', '2031-05-02')).toEqual([
      { start: new Date('2031-05-01T00:00:00Z'), ...full({ valid: 8, rate_limited: 1, revoked: 4 }) },
      { start: new Date('2031-05-02T00:00:00Z'), ...full({ insufficient_scope: 3 }) },
    ]);
    const stray = await db.pool.query(
      `SELECT count(*)::int AS n FROM api_key_verification_hours WHERE key_id <> ALL($1)`,
      [keys],
    );
    expect(stray.rows[0].n).toBe(0);
  });

  it('answers the UTC days asked for, both ends included, oldest first, and no bucket where nothing was counted', async () => {
    const k = keys[1];
    await store.recordOutcomes([
      row(k, '2031-04-30T23:00:00Z', { expired: 1 }),
      row(k, '2031-05-01T00:00:00Z', { disabled: 1 }),
      row(k, '2031-05-03T23:00:00Z', { pending: 1 }),
      row(k, '2031-05-04T00:00:00Z', { ip_refused: 1 }),
    ]);
    const hours = await outcomes.buckets('hour', 'key_id', k, '2031-05-01', '2031-05-03');
    expect(hours.map((b) => b.start.toISOString())).toEqual(['2031-05-01T00:00:00.000Z', '2031-05-03T23:00:00.000Z']);
    const days = await outcomes.buckets('day', 'key_id', k, '2031-05-01', '2031-05-03');
    expect(days).toEqual([
      { start: new Date('2031-05-01T00:00:00Z'), ...full({ disabled: 1 }) },
      { start: new Date('2031-05-03T00:00:00Z'), ...full({ pending: 1 }) },
    ]);
  });

  it("sums an org's keys per bucket, and never another org's", async () => {
    const [a, , c] = keys;
    await store.recordOutcomes([
      row(c, '2031-06-01T10:00:00Z', { valid: 1, credits_exhausted: 2 }),
      row(otherKey, '2031-06-01T10:00:00Z', { valid: 100 }),
    ]);
    await store.recordOutcomes([row(a, '2031-06-01T10:00:00Z', { valid: 3, usage_exceeded: 1 })]);
    expect(await outcomes.buckets('hour', 'org_id', orgId, '2031-06-01', '2031-06-01')).toEqual([
      { start: new Date('2031-06-01T10:00:00Z'), ...full({ valid: 4, credits_exhausted: 2, usage_exceeded: 1 }) },
    ]);
    expect(await outcomes.buckets('day', 'org_id', otherOrgId, '2031-06-01', '2031-06-01')).toEqual([
      { start: new Date('2031-06-01T00:00:00Z'), ...full({ valid: 100 }) },
    ]);
  });

  it('adds up batches written at once by two instances over the same keys, without a deadlock', async () => {
    const stores = sources.map((s) => new ApiKeyVerificationStore(s, new TestClock('2031-07-01T00:00:00Z')));
    const batch = (n: number) =>
      keys.flatMap((k) => [row(k, '2031-07-01T08:00:00Z', { valid: n }), row(k, '2031-07-01T09:00:00Z', { valid: n })]);
    await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 2].recordOutcomes(batch(1))));
    const days = await outcomes.buckets('day', 'org_id', orgId, '2031-07-01', '2031-07-01');
    expect(days.map((d) => d.valid)).toEqual([20 * 2 * keys.length]);
  });

  it('deletes hours before an instant and days before a UTC day, at most a batch per statement', async () => {
    const k = keys[2];
    await store.recordOutcomes([
      row(k, '2030-01-01T00:00:00Z', { valid: 1 }),
      row(k, '2030-01-01T01:00:00Z', { valid: 1 }),
      row(k, '2030-01-01T02:00:00Z', { valid: 1 }),
      row(k, '2030-01-02T00:00:00Z', { valid: 1 }),
    ]);
    expect(await outcomes.pruneHours(new Date('2030-01-01T02:00:00Z'), 1)).toBe(1);
    expect(await outcomes.pruneHours(new Date('2030-01-01T02:00:00Z'), 10)).toBe(1);
    expect(await outcomes.pruneHours(new Date('2030-01-01T02:00:00Z'), 10)).toBe(0);
    expect(await outcomes.pruneDays('2030-01-02', 10)).toBe(1);
    const left = async (granularity: 'hour' | 'day') =>
      (await outcomes.buckets(granularity, 'key_id', k, '2029-12-31', '2030-01-03')).map((b) => b.start.toISOString());
    expect(await left('hour')).toEqual(['2030-01-01T02:00:00.000Z', '2030-01-02T00:00:00.000Z']);
    expect(await left('day')).toEqual(['2030-01-02T00:00:00.000Z']);
  });
});
