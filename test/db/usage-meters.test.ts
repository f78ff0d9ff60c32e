import { randomUUID } from 'node:crypto';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SYSTEM_ATTRIBUTION, type Attribution, type Counters } from '../../src/common/meters.js';
import { DEFAULT_PLAN_LIMITS } from '../../src/common/plan-limits.js';
import { UsageRepository, type MeterChargeRequest } from '../../src/usage/usage.repository.js';
import { openRepositoryDatabase, testSettings, type RepositoryDatabase } from '../support/factories.js';

/**
 * The deployment's own meters in UsageRepository on real PostgreSQL: their rows
 * (usage_meter_counters, usage_meter_attribution), `kui_charge_meter_batch`, and the history
 * reads that show them beside the contract's meters.
 */
const DAY = '2031-03-14';
const ZERO: Counters = { asks: 0, retrieves: 0, imports: 0, captures: 0 };
const keyOf = (): Attribution => ({ kind: 'api_key', credentialId: randomUUID(), userId: randomUUID() });

/** A charge of the meter `exports` with a limit of 10 on the free plan, by the system, today, unless overridden. */
function exports(orgId: string, count: number, overrides: Partial<MeterChargeRequest> = {}): MeterChargeRequest {
  return { orgId, day: DAY, meter: 'exports', count, limit: 10, plan: 'free', by: SYSTEM_ATTRIBUTION, ...overrides };
}

describe('deployment meters in UsageRepository on real PostgreSQL', () => {
  let r: RepositoryDatabase;
  let usage: UsageRepository;
  let other: UsageRepository;

  beforeAll(async () => {
    r = await openRepositoryDatabase(2);
    const settings = testSettings();
    [usage, other] = r.sources.map((source) => new UsageRepository(source, settings));
  });
  afterAll(async () => r?.close());

  const counters = async (orgId: string) =>
    (
      await r.db.pool.query(
        `SELECT to_char(day, 'YYYY-MM-DD') AS day, meter, used, plan, meter_limit FROM usage_meter_counters
          WHERE org_id = $1 ORDER BY day, meter`,
        [orgId],
      )
    ).rows;
  const attribution = async (orgId: string) =>
    (
      await r.db.pool.query(
        `SELECT meter, credential_kind, credential_id, user_id, used FROM usage_meter_attribution
          WHERE org_id = $1 ORDER BY day, credential_kind, credential_id, meter`,
        [orgId],
      )
    ).rows;

  describe('chargeMeter (kui_charge_meter_batch)', () => {
    it('counts on a row of its own with the plan and limit it was decided under, and the credential’s share', async () => {
      const orgId = randomUUID();
      const by = keyOf();
      await usage.charge({
        orgId,
        day: DAY,
        meter: 'captures',
        count: 2,
        limit: 100,
        plan: 'free',
        limits: DEFAULT_PLAN_LIMITS.free,
        by,
      });

      expect(await usage.chargeMeter(exports(orgId, 3, { by }))).toEqual({
        used: 3,
        counters: { ...ZERO, captures: 2 },
      });
      expect(await usage.chargeMeter(exports(orgId, 1, { meter: 'pages', limit: null, plan: 'pro' }))).toEqual({
        used: 1,
        counters: { ...ZERO, captures: 2 },
      });
      expect(await counters(orgId)).toEqual([
        { day: DAY, meter: 'exports', used: 3, plan: 'free', meter_limit: 10 },
        { day: DAY, meter: 'pages', used: 1, plan: 'pro', meter_limit: null },
      ]);
      expect(await attribution(orgId)).toEqual([
        { meter: 'exports', credential_kind: 'api_key', credential_id: by.credentialId, user_id: by.userId, used: 3 },
        {
          meter: 'pages',
          credential_kind: 'system',
          credential_id: SYSTEM_ATTRIBUTION.credentialId,
          user_id: null,
          used: 1,
        },
      ]);
      const { rows } = await r.db.pool.query(`SELECT captures FROM usage_counters WHERE org_id = $1`, [orgId]);
      expect(rows, "the contract meters' row is not touched").toEqual([{ captures: 2 }]);
    });

    it('refuses a charge past its limit with null and records nothing, neither counter nor attribution', async () => {
      const orgId = randomUUID();
      expect(await usage.chargeMeter(exports(orgId, 11))).toBeNull();
      expect(await counters(orgId)).toEqual([]);
      expect(await attribution(orgId)).toEqual([]);

      await usage.chargeMeter(exports(orgId, 7));
      expect(await usage.chargeMeter(exports(orgId, 4))).toBeNull();
      expect(await usage.chargeMeter(exports(orgId, 3))).toMatchObject({ used: 10 });
      expect((await attribution(orgId)).map((a) => a.used)).toEqual([10]);
    });

    it('lets exactly the limit through of 200 simultaneous charges over two data sources with separate pools', async () => {
      const orgId = randomUUID();
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 ? other : usage).chargeMeter(exports(orgId, 1, { limit: 100 }))),
      );
      expect(outcomes.filter((o) => o !== null)).toHaveLength(100);
      expect((await counters(orgId))[0].used).toBe(100);
      expect((await attribution(orgId))[0].used).toBe(100);
    });

    it('decides each charge of one turn alone and in arrival order, in one statement beside the contract meters’ own', async () => {
      const orgId = randomUUID();
      const [a, b] = [keyOf(), keyOf()];
      await usage.chargeMeter(exports(orgId, 1)); // a first statement on this pool, so the batch below is alone
      const client: { prototype: { query: (...args: unknown[]) => unknown } } = (r.source.driver as PostgresDriver)
        .master.Client;
      const query = vi.spyOn(client.prototype, 'query');
      let outcomes: unknown[];
      let statements: string[];
      try {
        outcomes = await Promise.all([
          usage.chargeMeter(exports(orgId, 5, { by: a })),
          usage.chargeMeter(exports(orgId, 5, { by: b })),
          usage.chargeMeter(exports(orgId, 3, { by: a })),
          usage.chargeMeter(exports(orgId, 2, { by: b, meter: 'pages' })),
          usage.charge({
            orgId,
            day: DAY,
            meter: 'imports',
            count: 1,
            limit: 10,
            plan: 'free',
            limits: DEFAULT_PLAN_LIMITS.free,
            by: a,
          }),
        ]);
        statements = query.mock.calls.map(([q]) => (typeof q === 'string' ? q : (q as { text: string }).text));
      } finally {
        query.mockRestore();
      }
      expect(statements.filter((s) => /usage_|kui_charge/.test(s)).sort()).toEqual([
        expect.stringMatching(/FROM kui_charge_batch\(/),
        expect.stringMatching(/FROM kui_charge_meter_batch\(/),
      ]);
      expect(outcomes.slice(0, 4).map((o) => (o as { used: number } | null)?.used ?? null)).toEqual([6, null, 9, 2]);
      expect(
        (await attribution(orgId)).map((x) => [x.meter, x.credential_kind, x.credential_id, x.used]).sort(),
      ).toEqual(
        [
          ['exports', 'api_key', a.credentialId, 8],
          ['pages', 'api_key', b.credentialId, 2],
          ['exports', 'system', SYSTEM_ATTRIBUTION.credentialId, 1],
        ].sort(),
      );
    });
  });

  it('refunds a deployment meter on its own day from its row and the credential’s, never below zero', async () => {
    const orgId = randomUUID();
    const by = keyOf();
    await usage.chargeMeter(exports(orgId, 4, { by }));

    await other.refund(orgId, DAY, 'exports', 3, by);
    expect((await counters(orgId))[0].used).toBe(1);
    expect((await attribution(orgId))[0].used).toBe(1);
    await other.refund(orgId, DAY, 'exports', 5, by);
    expect((await counters(orgId))[0].used).toBe(0);
    expect((await attribution(orgId))[0].used).toBe(0);
  });

  it('reads today’s deployment meters of several orgs in one turn, each its own, none where nothing was charged', async () => {
    const [x, y] = [randomUUID(), randomUUID()];
    await usage.chargeMeter(exports(x, 2));
    await usage.chargeMeter(exports(x, 5, { meter: 'pages' }));
    await usage.chargeMeter(exports(y, 1, { day: '2031-03-13' }));

    expect(
      await Promise.all([other.readMeters(x, DAY), other.readMeters(y, DAY), other.readMeters(y, '2031-03-13')]),
    ).toEqual([{ exports: 2, pages: 5 }, {}, { exports: 1 }]);
  });

  describe('history', () => {
    it('shows the deployment meters charged each day with their recorded limit, and a day charged on them alone with their plan', async () => {
      const orgId = randomUUID();
      const [mine, theirs] = [keyOf(), keyOf()];
      await usage.chargeMeter(exports(orgId, 2, { by: mine, day: '2031-03-12', plan: 'pro', limit: 50 }));
      await usage.chargeMeter(exports(orgId, 3, { by: theirs, day: '2031-03-12', plan: 'pro', limit: 50 }));

      const [before, charged] = await usage.orgDaily(orgId, '2031-03-11', '2031-03-12');
      expect(before).toEqual({ day: '2031-03-11', counters: ZERO, plan: null, limits: null, meters: {} });
      expect(charged).toEqual({
        day: '2031-03-12',
        counters: ZERO,
        plan: 'pro',
        limits: null,
        meters: { exports: { used: 5, limit: 50 } },
      });
      const [, mineThatDay] = await usage.credentialDaily(
        orgId,
        'api_key',
        mine.credentialId,
        '2031-03-11',
        '2031-03-12',
      );
      expect(mineThatDay.meters).toEqual({ exports: { used: 2, limit: 50 } });
      const [, stranger] = await usage.credentialDaily(orgId, 'api_key', randomUUID(), '2031-03-11', '2031-03-12');
      expect(stranger.meters).toEqual({ exports: { used: 0, limit: 50 } });
    });

    it('pages the split by credential over both tables, a credential that charged only a deployment meter included', async () => {
      const orgId = randomUUID();
      const keys = [keyOf(), keyOf()].sort((a, b) => a.credentialId.localeCompare(b.credentialId));
      const contract = {
        orgId,
        day: DAY,
        meter: 'imports' as const,
        count: 1,
        limit: 10,
        plan: 'free' as const,
        limits: DEFAULT_PLAN_LIMITS.free,
      };
      await usage.charge({ ...contract, by: keys[0] });
      await usage.chargeMeter(exports(orgId, 2, { by: keys[0] }));
      await usage.chargeMeter(exports(orgId, 4, { by: keys[1] }));

      const [first] = await usage.attributionPage(orgId, DAY, DAY, null, 1);
      const rest = await usage.attributionPage(orgId, DAY, DAY, first, 10);

      expect([first, ...rest]).toEqual([
        {
          day: DAY,
          kind: 'api_key',
          credentialId: keys[0].credentialId,
          userId: keys[0].userId,
          counters: { ...ZERO, imports: 1 },
          meters: { exports: 2 },
        },
        {
          day: DAY,
          kind: 'api_key',
          credentialId: keys[1].credentialId,
          userId: keys[1].userId,
          counters: ZERO,
          meters: { exports: 4 },
        },
      ]);
    });

    it('prunes the deployment meters’ rows older than the day in bounded batches, table by table', async () => {
      const orgId = randomUUID();
      for (const day of ['2031-01-01', '2031-01-02', '2031-01-03']) await usage.chargeMeter(exports(orgId, 1, { day }));

      // Other tests' rows are all in March, so only this org's January rows can go.
      expect(await usage.pruneBatch('usage_meter_counters', '2031-01-03', 1)).toBe(1);
      expect(await usage.pruneBatch('usage_meter_counters', '2031-01-03', 10)).toBe(1);
      expect(await usage.pruneBatch('usage_meter_attribution', '2031-01-02', 10)).toBe(1);
      expect((await counters(orgId)).map((c) => c.day)).toEqual(['2031-01-03']);
      expect(await attribution(orgId)).toHaveLength(2);
    });
  });
});
