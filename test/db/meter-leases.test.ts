import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_ATTRIBUTION, type Attribution } from '../../src/common/meters.js';
import type { BlockAsk } from '../../src/budgets/meter-block-store.js';
import { MeterLeaseRepository, type MeterCount } from '../../src/usage/meter-lease.repository.js';
import { openRepositoryDatabase, testSettings, type RepositoryDatabase } from '../support/factories.js';

/**
 * The statements of leased charging on real PostgreSQL (kui_lease_meters, kui_count_meters, the
 * give-back and the reclaim), with three data sources standing for three instances.
 */
const DAY = '2031-03-14';
const TTL = 15_000;

describe('MeterLeaseRepository on real PostgreSQL', () => {
  let r: RepositoryDatabase;
  let repos: MeterLeaseRepository[];
  const holders = [randomUUID(), randomUUID(), randomUUID()];

  beforeAll(async () => {
    r = await openRepositoryDatabase(3);
    const settings = testSettings();
    repos = r.sources.map((source) => new MeterLeaseRepository(source, settings));
  });
  afterAll(async () => r?.close());

  const ask = (orgId: string, overrides: Partial<BlockAsk> = {}): BlockAsk => ({
    orgId,
    day: DAY,
    meter: 'wallet',
    limit: 1000,
    cost: 1,
    want: 1,
    ...overrides,
  });
  const count = (orgId: string, meter: string, n: number, by: Attribution = SYSTEM_ATTRIBUTION): MeterCount => ({
    orgId,
    day: DAY,
    meter,
    count: n,
    by,
    plan: 'free',
    walletLimit: 1000,
    importsLimit: 10,
    capturesLimit: 100,
    meterLimit: meter === 'exports' ? 50 : null,
  });
  const held = async (orgId: string) =>
    (
      await r.db.pool.query(
        `SELECT holder, held, expires_at > now() AS live FROM usage_leases WHERE org_id = $1 ORDER BY holder`,
        [orgId],
      )
    ).rows as Array<{ holder: string; held: number; live: boolean }>;
  const wallet = async (orgId: string) =>
    (
      await r.db.pool.query(
        `SELECT asks, retrieves, plan, wallet_limit FROM usage_counters WHERE org_id = $1 AND day = $2`,
        [orgId, DAY],
      )
    ).rows[0];

  it('never grants past the limit when three instances ask at once, and grants all of it to those who still ask', async () => {
    const orgId = await r.seed.org('free');
    let granted = 0;
    let refused = 0;
    // Ten rounds of 60 concurrent asks per instance, each of 1 to 7 units with a block size of its own.
    for (let round = 0; round < 10; round++) {
      const grants = await Promise.all(
        repos.flatMap((repo, i) =>
          Array.from({ length: 60 }, (_, k) =>
            repo.lease(ask(orgId, { cost: 1 + (k % 7), want: 1 + ((k * 13) % 40) }), holders[i], TTL),
          ),
        ),
      );
      for (const g of grants) {
        granted += g.granted;
        if (g.granted === 0) refused++;
        expect(g.counted + g.held).toBeLessThanOrEqual(1000);
      }
    }
    expect(granted).toBe(1000);
    expect(refused).toBeGreaterThan(0);
    const rows = await held(orgId);
    expect(rows.reduce((n, row) => n + row.held, 0)).toBe(1000);
    expect(rows.every((row) => row.live)).toBe(true);
  });

  it('moves counted units out of the instance’s block into the counters and the credential’s split, in one write', async () => {
    const orgId = await r.seed.org('free');
    const key: Attribution = { kind: 'api_key', credentialId: randomUUID(), userId: randomUUID() };
    expect((await repos[0].lease(ask(orgId, { want: 100 }), holders[0], TTL)).granted).toBe(125);

    const after = await repos[0].count(
      [count(orgId, 'asks', 30, key), count(orgId, 'retrieves', 5), count(orgId, 'exports', 4, key)],
      holders[0],
    );

    expect(after.sort((a, b) => a.meter.localeCompare(b.meter))).toEqual([
      { orgId, day: DAY, meter: 'exports', used: 4 },
      { orgId, day: DAY, meter: 'wallet', used: 35 },
    ]);
    expect(await wallet(orgId)).toEqual({ asks: 30, retrieves: 5, plan: 'free', wallet_limit: 1000 });
    expect((await held(orgId)).map((h) => h.held)).toEqual([125 - 35]);
    const split = await r.db.pool.query(
      `SELECT credential_kind, asks, retrieves FROM usage_attribution WHERE org_id = $1 ORDER BY credential_kind`,
      [orgId],
    );
    expect(split.rows).toEqual([
      { credential_kind: 'api_key', asks: 30, retrieves: 0 },
      { credential_kind: 'system', asks: 0, retrieves: 5 },
    ]);
    const exports = await r.db.pool.query(
      `SELECT m.used, m.meter_limit, a.used AS by_key FROM usage_meter_counters m
         JOIN usage_meter_attribution a USING (org_id, day, meter) WHERE m.org_id = $1`,
      [orgId],
    );
    expect(exports.rows).toEqual([{ used: 4, meter_limit: 50, by_key: 4 }]);
    // Counted and leased together still take the limit: 35 counted + 90 held of 1000 leave 875.
    const next = await repos[1].lease(ask(orgId, { cost: 900 }), holders[1], TTL);
    expect(next).toMatchObject({ granted: 0, counted: 35, held: 90 });
  });

  it('counts a lapsed block for nothing, renews a live one with a cost of 0, and reclaims lapsed rows', async () => {
    const orgId = await r.seed.org('free');
    expect((await repos[0].lease(ask(orgId, { limit: 100, want: 100 }), holders[0], TTL)).granted).toBe(100);
    expect((await repos[1].lease(ask(orgId, { limit: 100 }), holders[1], TTL)).granted).toBe(0);
    // Renewing grants nothing and says the block is live.
    expect(await repos[0].lease(ask(orgId, { limit: 100, cost: 0, want: 0 }), holders[0], TTL)).toMatchObject({
      granted: 0,
      live: true,
    });

    // The instance died: its block lapses.
    await r.db.pool.query(`UPDATE usage_leases SET expires_at = now() - interval '1 second' WHERE org_id = $1`, [
      orgId,
    ]);
    expect(await repos[0].lease(ask(orgId, { limit: 100, cost: 0, want: 0 }), holders[0], TTL)).toMatchObject({
      live: false,
    });
    expect((await repos[1].lease(ask(orgId, { limit: 100, want: 100 }), holders[1], TTL)).granted).toBe(100);
    // Giving back to a lapsed block changes nothing; to a live one, it frees the units.
    await repos[0].giveBack([{ orgId, day: DAY, meter: 'wallet', count: 100 }], holders[0]);
    await repos[1].giveBack([{ orgId, day: DAY, meter: 'wallet', count: 40 }], holders[1]);
    expect(await held(orgId)).toEqual(
      [
        { holder: holders[0], held: 100, live: false },
        { holder: holders[1], held: 60, live: true },
      ].sort((a, b) => a.holder.localeCompare(b.holder)),
    );
    expect(await repos[2].reclaim(10_000)).toBeGreaterThanOrEqual(1);
    expect((await held(orgId)).map((h) => h.holder)).toEqual([holders[1]]);
    expect((await repos[2].lease(ask(orgId, { limit: 100, want: 100 }), holders[2], TTL)).granted).toBe(40);
  });

  it('treats an unlimited meter as the column’s bound, leasing blocks of at most 10,000', async () => {
    const orgId = await r.seed.org('pro');
    expect(
      (await repos[0].lease(ask(orgId, { limit: null, meter: 'exports', want: 1 }), holders[0], TTL)).granted,
    ).toBe(10_000);
  });

  it('keeps counted use plus live blocks within the limit while three instances lease, count and give back at once', async () => {
    const orgId = await r.seed.org('free');
    const limit = 200;
    const spentBy = [0, 0, 0];
    await Promise.all(
      repos.map(async (repo, i) => {
        let tokens = 0;
        for (let step = 0; step < 40; step++) {
          const grant = await repo.lease(ask(orgId, { limit, cost: 1 + (step % 4), want: 6 }), holders[i], TTL);
          expect(grant.counted + grant.held).toBeLessThanOrEqual(limit);
          tokens += grant.granted;
          // Spend most of it, count what was spent, now and then give the rest back.
          const spent = Math.min(tokens, 1 + (step % 5));
          tokens -= spent;
          spentBy[i] += spent;
          if (spent > 0) await repo.count([count(orgId, 'asks', spent)], holders[i]);
          if (step % 7 === 6 && tokens > 0) {
            await repo.giveBack([{ orgId, day: DAY, meter: 'wallet', count: tokens }], holders[i]);
            tokens = 0;
          }
        }
        if (tokens > 0) await repo.giveBack([{ orgId, day: DAY, meter: 'wallet', count: tokens }], holders[i]);
      }),
    );
    const spent = spentBy.reduce((a, b) => a + b, 0);
    expect((await wallet(orgId)).asks).toBe(spent);
    expect((await held(orgId)).reduce((n, row) => n + row.held, 0)).toBe(0);
    // The instances wanted more than the limit: never past it, and close to all of it (what an
    // instance still held when the others had stopped asking went back unspent).
    expect(spent).toBeLessThanOrEqual(limit);
    expect(spent).toBeGreaterThan(limit - 3 * 6);
  });
});
