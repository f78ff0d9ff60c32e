import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UnknownOrgError, UsageLimitExceededError } from '../../src/common/meters.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { TestClock } from '../support/clock.js';
import { createSeededDatabase, createTestDatabase, type TestDatabase } from '../support/database.js';
import { Seeder, TEST_SESSION_SECRET } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const NOW = '2031-03-14T12:00:00.000Z';

// The metering engine as the app wires it (UsageService on two running instances); each
// statement of its repository is tested on its own in test/db/usage-repository.test.ts.
describe('the metering engine on real PostgreSQL', () => {
  let db: TestDatabase;
  let seed: Seeder;
  let a: TestApp;
  let b: TestApp;
  let usageA: UsageService;
  let usageB: UsageService;
  const clock = new TestClock(NOW);

  beforeAll(async () => {
    db = await createTestDatabase();
    seed = new Seeder(db.pool);
    // Two service instances, each with its own Nest container and its own pg pool, on one database.
    // The exact path: these tests read what each charge answered and the tables right after it; the
    // leased path is test/e2e/usage-leases.test.ts's.
    const env = { USAGE_CHARGING: 'exact' };
    [a, b] = await Promise.all([startTestApp({ db, clock, env }), startTestApp({ db, clock, env })]);
    usageA = a.app.get(UsageService);
    usageB = b.app.get(UsageService);
  });
  beforeEach(() => clock.set(NOW));
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  async function rows(orgId: string) {
    const { rows } = await db.pool.query(
      `SELECT day::text, asks, retrieves, imports, captures FROM usage_counters WHERE org_id = $1 ORDER BY day`,
      [orgId],
    );
    return rows as Array<{ day: string; asks: number; retrieves: number; imports: number; captures: number }>;
  }

  async function refusal(promise: Promise<unknown>): Promise<UsageLimitExceededError> {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UsageLimitExceededError);
    return error as UsageLimitExceededError;
  }

  it('lets exactly 100 of 200 simultaneous wallet charges through two instances with separate pools', async () => {
    expect(a.app.get(DataSource)).not.toBe(b.app.get(DataSource));
    const orgId = await seed.org('free');

    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        (i % 2 === 0 ? usageA : usageB).charge(orgId, i % 4 < 2 ? 'asks' : 'retrieves', 1),
      ),
    );

    const passed = outcomes.filter((o) => o.status === 'fulfilled').length;
    const refused = outcomes.filter(
      (o) => o.status === 'rejected' && o.reason instanceof UsageLimitExceededError,
    ).length;
    expect([passed, refused]).toEqual([100, 100]);
    const [row] = await rows(orgId);
    expect(row.asks + row.retrieves).toBe(100);
    expect((await a.api.get('/usage', seed.session(...(await memberOf(orgId))))).body.mcp_queries).toEqual({
      used: 100,
      limit: 100,
    });
  });

  async function memberOf(orgId: string): Promise<[string, string]> {
    const user = await seed.user();
    await seed.member(orgId, user.id, 'viewer');
    return [user.id, user.email];
  }

  it('refuses a charge of 5 with 3 left, records nothing, and still accepts the last 3', async () => {
    const orgId = await seed.org('free');
    await usageA.charge(orgId, 'asks', 97);

    const error = await refusal(usageB.charge(orgId, 'asks', 5));

    expect(error).toMatchObject({ meter: 'asks', limit: 100, used: 97, requested: 5 });
    expect(error.resetsAt.toISOString()).toBe('2031-03-15T00:00:00.000Z');
    expect((await rows(orgId))[0].asks).toBe(97);
    await usageB.charge(orgId, 'asks', 3);
    expect((await rows(orgId))[0].asks).toBe(100);
  });

  it('refuses a first charge of the day that alone passes the limit without creating a row', async () => {
    const orgId = await seed.org('free');

    await refusal(usageA.charge(orgId, 'imports', 11));

    expect(await rows(orgId)).toEqual([]);
  });

  it('applies the wallet limit to asks and retrieves together', async () => {
    const orgId = await seed.org('free');
    await usageA.charge(orgId, 'asks', 60);
    await usageA.charge(orgId, 'retrieves', 40);

    const asks = await refusal(usageA.charge(orgId, 'asks', 1));
    const retrieves = await refusal(usageA.charge(orgId, 'retrieves', 1));

    expect(asks).toMatchObject({ used: 100, limit: 100 });
    expect(retrieves.message).toContain('query wallet');
    expect(await rows(orgId)).toEqual([{ day: '2031-03-14', asks: 60, retrieves: 40, imports: 0, captures: 0 }]);
  });

  it('keeps imports and captures apart from the wallet and from each other', async () => {
    const orgId = await seed.org('free');
    await usageA.charge(orgId, 'asks', 100);

    await usageA.charge(orgId, 'imports', 10);
    await usageA.charge(orgId, 'captures', 100);
    const imports = await refusal(usageA.charge(orgId, 'imports', 1));
    const captures = await refusal(usageA.charge(orgId, 'captures', 1));

    expect(imports).toMatchObject({ meter: 'imports', limit: 10, used: 10 });
    expect(captures).toMatchObject({ meter: 'captures', limit: 100, used: 100 });
    expect(await rows(orgId)).toEqual([{ day: '2031-03-14', asks: 100, retrieves: 0, imports: 10, captures: 100 }]);
  });

  it('treats a null limit as unlimited', async () => {
    const orgId = await seed.org('pro');

    await usageA.charge(orgId, 'asks', 1_000_000);
    const result = await usageB.charge(orgId, 'retrieves', 1_000_000);

    expect(result.counters).toMatchObject({ asks: 1_000_000, retrieves: 1_000_000 });
  });

  it('refuses cleanly, rather than overflowing, a charge an unlimited meter’s counter cannot hold', async () => {
    const orgId = await seed.org('pro');
    await db.pool.query(
      `INSERT INTO usage_counters (org_id, day, asks, retrieves) VALUES ($1, '2031-03-14', 2147483000, 2147483000)`,
      [orgId],
    );

    const error = await refusal(usageA.charge(orgId, 'asks', 1000));
    await usageA.charge(orgId, 'asks', 647);

    expect(error).toMatchObject({ meter: 'asks', limit: null, used: 2147483000, requested: 1000 });
    expect(error.message).toMatch(/^Daily asks capacity reached: 2147483000 used, 1000 more requested/);
    expect((await rows(orgId))[0]).toMatchObject({ asks: 2147483647, retrieves: 2147483000 });
  });

  it('returns the counters after the charge and the next reset', async () => {
    const orgId = await seed.org('free');
    await usageA.charge(orgId, 'captures', 2);

    const result = await usageA.charge(orgId, 'retrieves', 3);

    expect(result).toEqual({
      orgId,
      meter: 'retrieves',
      count: 3,
      used: 3,
      day: '2031-03-14',
      counters: { asks: 0, retrieves: 3, imports: 0, captures: 2 },
      resetsAt: new Date('2031-03-15T00:00:00.000Z'),
      by: { kind: 'system', credentialId: '00000000-0000-0000-0000-000000000000', userId: null },
    });
  });

  it('lands a charge at 23:59:59.999 UTC and one at 00:00:00.000 on different days, and moves the reset', async () => {
    const orgId = await seed.org('free');
    clock.set('2031-03-14T23:59:59.999Z');
    await usageA.charge(orgId, 'asks', 100);
    const late = await refusal(usageA.charge(orgId, 'asks', 1));

    clock.set('2031-03-15T00:00:00.000Z');
    const early = await usageB.charge(orgId, 'asks', 1);

    expect(late.resetsAt.toISOString()).toBe('2031-03-15T00:00:00.000Z');
    expect(early.resetsAt.toISOString()).toBe('2031-03-16T00:00:00.000Z');
    expect((await rows(orgId)).map((r) => [r.day, r.asks])).toEqual([
      ['2031-03-14', 100],
      ['2031-03-15', 1],
    ]);
  });

  it('gives a refunded charge back to the day it was made, even after midnight', async () => {
    const orgId = await seed.org('free');
    clock.set('2031-03-14T23:59:59.999Z');
    await usageA.charge(orgId, 'captures', 100);
    const charge = await usageA.charge(orgId, 'imports', 4);
    clock.set('2031-03-15T00:00:00.000Z');
    await usageA.charge(orgId, 'imports', 1);

    await usageB.refund(charge);

    expect((await rows(orgId)).map((r) => [r.day, r.imports, r.captures])).toEqual([
      ['2031-03-14', 0, 100],
      ['2031-03-15', 1, 0],
    ]);
  });

  it('refuses an org it does not know with UnknownOrgError and records nothing', async () => {
    const orgId = randomUUID();

    await expect(usageA.charge(orgId, 'asks', 1)).rejects.toBeInstanceOf(UnknownOrgError);
    expect(await rows(orgId)).toEqual([]);
  });
});

describe('npm run admin -- usage record', () => {
  let db: TestDatabase;
  let seed: Seeder;
  beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
  afterAll(async () => db?.drop());

  function admin(...args: string[]) {
    return run(process.execPath, [join(ROOT, 'scripts', 'run-built.mjs'), 'cli/admin.js', ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'test',
        DATABASE_URL: db.url,
        DB_MIGRATE: 'false',
        SESSION_JWT_SECRET: TEST_SESSION_SECRET,
      },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
  }

  it('charges through the same atomic path, and over the limit exits non-zero having recorded nothing', async () => {
    const orgId = await seed.org('free');

    const over = await admin('usage', 'record', '--org', orgId, '--meter', 'imports', '--count', '11');
    const { rows: afterRefusal } = await db.pool.query(`SELECT * FROM usage_counters WHERE org_id = $1`, [orgId]);
    const within = await admin('usage', 'record', '--org', orgId, '--meter', 'imports', '--count', '10');

    expect(over.code).not.toBe(0);
    expect(over.stdout).toBe('');
    expect(over.stderr).toMatch(/^error: Daily imports limit reached: 0 of 10 used, 11 more requested/);
    expect(afterRefusal).toEqual([]);
    expect(within.code).toBe(0);
    expect(JSON.parse(within.stdout)).toMatchObject({ org_id: orgId, meter: 'imports', count: 10, imports: 10 });
    const { rows } = await db.pool.query(`SELECT sum(imports)::int AS imports FROM usage_counters WHERE org_id = $1`, [
      orgId,
    ]);
    expect(rows[0].imports).toBe(10);
  }, 120_000);
});
