import { randomUUID } from 'node:crypto';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_PLAN_LIMITS } from '../../src/common/plan-limits.js';
import { SYSTEM_ATTRIBUTION, type Attribution, type Counters, type Meter } from '../../src/common/meters.js';
import { UsageRepository, type ChargeRequest } from '../../src/usage/usage.repository.js';
import { openRepositoryDatabase, testSettings, type RepositoryDatabase } from '../support/factories.js';

/**
 * Every statement of UsageRepository on real PostgreSQL, without the app: a data source of the
 * test's own (two, where two instances matter) and the repository class.
 */
const DAY = '2031-03-14';
const FREE = DEFAULT_PLAN_LIMITS.free;
const PRO = DEFAULT_PLAN_LIMITS.pro;
const ZERO: Counters = { asks: 0, retrieves: 0, imports: 0, captures: 0 };

const keyOf = (userId = randomUUID()): Attribution => ({ kind: 'api_key', credentialId: randomUUID(), userId });

/** A charge on the free plan (its limit for the meter), by the system, today, unless overridden. */
function charge(orgId: string, meter: Meter, count: number, overrides: Partial<ChargeRequest> = {}): ChargeRequest {
  const limit = meter === 'asks' || meter === 'retrieves' ? FREE.wallet : FREE[meter];
  return { orgId, day: DAY, meter, count, limit, plan: 'free', limits: FREE, by: SYSTEM_ATTRIBUTION, ...overrides };
}

describe('UsageRepository on real PostgreSQL', () => {
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
        `SELECT to_char(day, 'YYYY-MM-DD') AS day, asks, retrieves, imports, captures, plan, wallet_limit, imports_limit, captures_limit
           FROM usage_counters WHERE org_id = $1 ORDER BY day`,
        [orgId],
      )
    ).rows;
  const attribution = async (orgId: string) =>
    (
      await r.db.pool.query(
        `SELECT to_char(day, 'YYYY-MM-DD') AS day, credential_kind, credential_id, user_id, asks, retrieves, imports, captures
           FROM usage_attribution WHERE org_id = $1 ORDER BY day, credential_kind, credential_id`,
        [orgId],
      )
    ).rows;

  describe('charge (kui_charge_batch)', () => {
    it('returns the counters after the charge and records the plan and limits that applied with the day', async () => {
      const orgId = randomUUID();
      await usage.charge(charge(orgId, 'captures', 2));
      expect(await usage.charge(charge(orgId, 'retrieves', 3))).toEqual({
        asks: 0,
        retrieves: 3,
        imports: 0,
        captures: 2,
      });
      expect(await counters(orgId)).toEqual([
        {
          day: DAY,
          asks: 0,
          retrieves: 3,
          imports: 0,
          captures: 2,
          plan: 'free',
          wallet_limit: 100,
          imports_limit: 10,
          captures_limit: 100,
        },
      ]);
    });

    it('lets exactly 100 of 200 simultaneous wallet charges through two data sources with separate pools', async () => {
      const orgId = randomUUID();
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          (i % 2 ? other : usage).charge(charge(orgId, i % 4 < 2 ? 'asks' : 'retrieves', 1)),
        ),
      );
      expect(outcomes.filter((o) => o !== null)).toHaveLength(100);
      const [row] = await counters(orgId);
      expect(row.asks + row.retrieves).toBe(100);
    });

    it('refuses a charge past the limit with null and records nothing, neither counter nor attribution', async () => {
      const orgId = randomUUID();
      const by = keyOf();
      expect(await usage.charge(charge(orgId, 'imports', 11, { by }))).toBeNull();
      expect(await counters(orgId)).toEqual([]);
      expect(await attribution(orgId)).toEqual([]);

      await usage.charge(charge(orgId, 'imports', 7, { by }));
      expect(await usage.charge(charge(orgId, 'imports', 4, { by }))).toBeNull();
      expect(await usage.charge(charge(orgId, 'imports', 3, { by }))).toMatchObject({ imports: 10 });
      expect((await attribution(orgId)).map((a) => a.imports)).toEqual([10]);
    });

    it('applies the wallet limit to asks and retrieves together, and keeps imports and captures apart', async () => {
      const orgId = randomUUID();
      await usage.charge(charge(orgId, 'asks', 60));
      await usage.charge(charge(orgId, 'retrieves', 40));
      expect(await usage.charge(charge(orgId, 'asks', 1))).toBeNull();
      expect(await usage.charge(charge(orgId, 'retrieves', 1))).toBeNull();
      expect(await usage.charge(charge(orgId, 'imports', 10))).toMatchObject({ asks: 60, retrieves: 40, imports: 10 });
      expect(await usage.charge(charge(orgId, 'captures', 100))).toMatchObject({ captures: 100 });
    });

    it('treats a null limit as unlimited, and refuses rather than overflows a counter that cannot hold the charge', async () => {
      const orgId = randomUUID();
      const unlimited = { plan: 'pro' as const, limits: PRO, limit: null };
      expect(await usage.charge(charge(orgId, 'asks', 1_000_000, unlimited))).toMatchObject({ asks: 1_000_000 });
      await r.db.pool.query(`UPDATE usage_counters SET asks = 2147483000 WHERE org_id = $1`, [orgId]);
      expect(await usage.charge(charge(orgId, 'asks', 1000, unlimited))).toBeNull();
      expect(await usage.charge(charge(orgId, 'asks', 647, unlimited))).toMatchObject({ asks: 2147483647 });
    });

    it('decides each charge of one turn alone, in arrival order, in one statement that also writes each credential’s share', async () => {
      const orgId = randomUUID();
      const [a, b] = [keyOf(), keyOf()];
      await usage.charge(charge(orgId, 'imports', 1)); // a first statement on this pool, so the batch below is alone
      // Every statement on this data source's pool, whichever way it is sent (its own client class).
      const client: { prototype: { query: (...args: unknown[]) => unknown } } = (r.source.driver as PostgresDriver)
        .master.Client;
      const query = vi.spyOn(client.prototype, 'query');
      let outcomes: Array<Counters | null>;
      let statements: string[];
      try {
        outcomes = await Promise.all([
          usage.charge(charge(orgId, 'imports', 5, { by: a })),
          usage.charge(charge(orgId, 'imports', 5, { by: b })),
          usage.charge(charge(orgId, 'imports', 3, { by: a })),
          usage.charge(charge(orgId, 'captures', 2, { by: b })),
        ]);
        statements = query.mock.calls.map(([q]) => (typeof q === 'string' ? q : (q as { text: string }).text));
      } finally {
        query.mockRestore();
      }
      expect(statements.filter((s) => /usage_|kui_charge/.test(s))).toEqual([
        expect.stringMatching(/kui_charge_batch/),
      ]);
      expect(outcomes).toEqual([
        { ...ZERO, imports: 6 },
        null,
        { ...ZERO, imports: 9 },
        { ...ZERO, imports: 9, captures: 2 },
      ]);
      expect(
        (await attribution(orgId)).map((x) => [x.credential_kind, x.credential_id, x.user_id, x.imports, x.captures]),
      ).toEqual(
        [
          ['api_key', a.credentialId, a.userId, 8, 0],
          ['api_key', b.credentialId, b.userId, 0, 2],
          ['system', SYSTEM_ATTRIBUTION.credentialId, null, 1, 0],
        ].sort((x, y) => String(x[0]).localeCompare(String(y[0])) || String(x[1]).localeCompare(String(y[1]))),
      );
    });
  });

  describe('refund (kui_refund_<meter>)', () => {
    it('gives a charge back on its own day, from the counter and the credential’s row, never below zero', async () => {
      const orgId = randomUUID();
      const by = keyOf();
      await usage.charge(charge(orgId, 'imports', 4, { by }));
      await usage.charge(charge(orgId, 'imports', 1, { by, day: '2031-03-15' }));

      await other.refund(orgId, DAY, 'imports', 3, by);
      expect((await counters(orgId)).map((c) => [c.day, c.imports])).toEqual([
        [DAY, 1],
        ['2031-03-15', 1],
      ]);
      expect((await attribution(orgId)).map((a) => [a.day, a.imports])).toEqual([
        [DAY, 1],
        ['2031-03-15', 1],
      ]);

      await other.refund(orgId, DAY, 'imports', 5, by);
      expect((await counters(orgId))[0].imports).toBe(0);
      expect((await attribution(orgId))[0].imports).toBe(0);
    });

    it('touches no attribution row when the day has no counter row', async () => {
      const orgId = randomUUID();
      const by = keyOf();
      await r.db.pool.query(
        `INSERT INTO usage_attribution (org_id, day, credential_kind, credential_id, user_id, asks) VALUES ($1, $2, 'api_key', $3, $4, 5)`,
        [orgId, DAY, by.credentialId, by.userId],
      );
      await usage.refund(orgId, DAY, 'asks', 2, by);
      expect((await attribution(orgId))[0].asks).toBe(5);
    });
  });

  describe('read (kui_read_usage_many)', () => {
    it('answers reads of one turn from one statement, each its own org and day, zeros where nothing was charged', async () => {
      const [x, y] = [randomUUID(), randomUUID()];
      await usage.charge(charge(x, 'asks', 2));
      await usage.charge(charge(y, 'captures', 7));
      await usage.charge(charge(y, 'captures', 1, { day: '2031-03-15' }));
      const reads = await Promise.all([
        other.read(x, DAY),
        other.read(y, DAY),
        other.read(y.toUpperCase(), '2031-03-15'),
        other.read(randomUUID(), DAY),
        other.read(x, '2031-03-13'),
      ]);
      expect(reads).toEqual([{ ...ZERO, asks: 2 }, { ...ZERO, captures: 7 }, { ...ZERO, captures: 1 }, ZERO, ZERO]);
    });
  });

  describe('orgDaily', () => {
    it('lists every day of the range with zeros for days without charges, and the plan recorded with charged days', async () => {
      const orgId = randomUUID();
      await usage.charge(charge(orgId, 'asks', 2, { day: '2031-03-12' }));
      await usage.charge(
        charge(orgId, 'imports', 1, { day: '2031-03-14', plan: 'pro', limits: PRO, limit: PRO.imports }),
      );
      expect(await usage.orgDaily(orgId, '2031-03-11', '2031-03-14')).toEqual([
        { day: '2031-03-11', counters: ZERO, plan: null, limits: null, meters: {} },
        { day: '2031-03-12', counters: { ...ZERO, asks: 2 }, plan: 'free', limits: FREE, meters: {} },
        { day: '2031-03-13', counters: ZERO, plan: null, limits: null, meters: {} },
        { day: '2031-03-14', counters: { ...ZERO, imports: 1 }, plan: 'pro', limits: PRO, meters: {} },
      ]);
    });

    it('pages by day: only days after afterDay, at most limit of them', async () => {
      const orgId = randomUUID();
      const days = (rows: Array<{ day: string }>) => rows.map((d) => d.day);
      expect(days(await usage.orgDaily(orgId, '2031-03-01', '2031-03-31', '2031-03-10', 3))).toEqual([
        '2031-03-11',
        '2031-03-12',
        '2031-03-13',
      ]);
      expect(days(await usage.orgDaily(orgId, '2031-03-01', '2031-03-31', '2031-03-30', 3))).toEqual(['2031-03-31']);
      expect(await usage.orgDaily(orgId, '2031-03-01', '2031-03-31', '2031-03-31', 3)).toEqual([]);
    });
  });

  describe('credentialDaily', () => {
    it("lists one credential's share per day with the org's recorded limits, and zeros for other credentials' days", async () => {
      const orgId = randomUUID();
      const [mine, theirs] = [keyOf(), keyOf()];
      await usage.charge(charge(orgId, 'asks', 3, { by: mine, day: '2031-03-13' }));
      await usage.charge(charge(orgId, 'asks', 4, { by: theirs, day: '2031-03-13' }));
      await usage.charge(charge(orgId, 'captures', 5, { by: theirs, day: '2031-03-14' }));
      expect(await usage.credentialDaily(orgId, 'api_key', mine.credentialId, '2031-03-13', '2031-03-15')).toEqual([
        { day: '2031-03-13', counters: { ...ZERO, asks: 3 }, plan: 'free', limits: FREE, meters: {} },
        { day: '2031-03-14', counters: ZERO, plan: 'free', limits: FREE, meters: {} },
        { day: '2031-03-15', counters: ZERO, plan: null, limits: null, meters: {} },
      ]);
      // Another org's rows for the same credential id are not this org's.
      expect(
        (await usage.credentialDaily(randomUUID(), 'api_key', mine.credentialId, '2031-03-13', '2031-03-13'))[0]
          .counters,
      ).toEqual(ZERO);
    });
  });

  describe('attributionPage', () => {
    it('pages the org’s rows in (day, kind, credential) order after the given row, within the range', async () => {
      const orgId = randomUUID();
      const keys = [keyOf(), keyOf(), keyOf()].sort((a, b) => a.credentialId.localeCompare(b.credentialId));
      for (const day of ['2031-03-10', '2031-03-11']) {
        for (const by of [...keys, SYSTEM_ATTRIBUTION]) await usage.charge(charge(orgId, 'captures', 1, { by, day }));
      }
      await usage.charge(charge(orgId, 'captures', 1, { day: '2031-03-12' }));
      await usage.charge(charge(randomUUID(), 'captures', 1, { day: '2031-03-10' }));

      const walk: string[] = [];
      let after: { day: string; kind: Attribution['kind']; credentialId: string } | null = null;
      for (let page = 0; page < 10; page++) {
        const rows = await usage.attributionPage(orgId, '2031-03-10', '2031-03-11', after, 3);
        if (rows.length === 0) break;
        expect(rows.length).toBeLessThanOrEqual(3);
        walk.push(...rows.map((x) => `${x.day} ${x.kind} ${x.credentialId}`));
        const last = rows[rows.length - 1];
        after = { day: last.day, kind: last.kind, credentialId: last.credentialId };
      }
      const expected = ['2031-03-10', '2031-03-11'].flatMap((day) => [
        ...keys.map((k) => `${day} api_key ${k.credentialId}`),
        `${day} system ${SYSTEM_ATTRIBUTION.credentialId}`,
      ]);
      expect(walk).toEqual(expected);

      const [first] = await usage.attributionPage(orgId, '2031-03-10', '2031-03-10', null, 1);
      expect(first).toEqual({
        day: '2031-03-10',
        kind: 'api_key',
        credentialId: keys[0].credentialId,
        userId: keys[0].userId,
        counters: { ...ZERO, captures: 1 },
        meters: {},
      });
    });
  });

  describe('pruneBatch', () => {
    it('deletes at most a batch of rows older than the day from one table, and reports how many', async () => {
      const orgId = randomUUID();
      for (const day of ['2031-01-01', '2031-01-02', '2031-01-03', '2031-01-04'])
        await usage.charge(charge(orgId, 'asks', 1, { day, by: keyOf() }));
      const days = async (table: string) =>
        (
          await r.db.pool.query(`SELECT to_char(day, 'YYYY-MM-DD') AS d FROM ${table} WHERE org_id = $1 ORDER BY day`, [
            orgId,
          ])
        ).rows.map((x) => x.d);

      // Other tests' rows are all in March, so only this org's January rows can go.
      expect(await usage.pruneBatch('usage_counters', '2031-01-04', 2)).toBe(2);
      expect(await days('usage_counters')).toHaveLength(2);
      expect(await usage.pruneBatch('usage_counters', '2031-01-04', 10)).toBe(1);
      expect(await days('usage_counters')).toEqual(['2031-01-04']);
      expect(await days('usage_attribution'), 'the other table is untouched').toHaveLength(4);

      expect(await usage.pruneBatch('usage_attribution', '2031-01-03', 10)).toBe(2);
      expect(await days('usage_attribution')).toEqual(['2031-01-03', '2031-01-04']);
      expect(await usage.pruneBatch('usage_attribution', '2031-01-03', 10)).toBe(0);
    });
  });
});
