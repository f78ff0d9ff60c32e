import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { resolve } from 'node:path';
import { Controller, Get } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequireScopes } from '../../src/auth/auth.decorators.js';
import { COUNTER_FLUSH_MS } from '../../src/common/batched-counter.js';
import { SystemClock } from '../../src/common/clock.js';
import { Charges } from '../../src/usage/charges.decorator.js';
import { METER_LEASE_TTL_MS } from '../../src/budgets/org-meter-leases.js';
import { startChargingHost } from '../support/charging-host.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { childEnv, freePort, ROOT } from '../support/processes.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';

/**
 * A host process that charges on leases (the bench's host, bench/charge-host.mjs, on the built
 * library: `npm test` builds dist/ first) is stopped while it charges: SIGTERM loses no count, and
 * `kill -9` leaves uncounted at most what it charged in its last flush interval, while the block
 * it held counts only until its lease lapses.
 */
/** The same route in an instance of this process: what survives the killed one. */
@Controller('host')
class AskController {
  @Get('ask')
  @RequireScopes('decisions:read')
  @Charges('asks')
  ask(): { ok: true } {
    return { ok: true };
  }
}

interface Host {
  child: ChildProcess;
  port: number;
  exited: Promise<void>;
}

async function startHost(databaseUrl: string): Promise<Host> {
  const port = await freePort();
  const child = spawn(process.execPath, [resolve(ROOT, 'bench/charge-host.mjs')], {
    cwd: ROOT,
    env: childEnv({
      DATABASE_URL: databaseUrl,
      SESSION_JWT_SECRET: TEST_SESSION_SECRET,
      API_KEY_SECRET: TEST_API_KEY_SECRET,
      PORT: String(port),
      DB_POOL_MAX: '4',
      USAGE_CHARGING: 'leased',
    }),
    stdio: 'ignore',
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  // Ready once the route answers (401 without a credential).
  for (let tries = 0; ; tries++) {
    const status = await get(port, '').catch(() => 0);
    if (status === 401) break;
    if (tries > 300 || child.exitCode !== null) throw new Error('the charging host did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, port, exited };
}

/** GET /host/ask on a connection of its own: once the host stops listening, a request is refused, not queued. */
function get(port: number, token: string): Promise<number> {
  return new Promise((ok, fail) => {
    const headers = token ? { authorization: `Bearer ${token}` } : {};
    const req = http.request({ host: '127.0.0.1', port, path: '/host/ask', agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => ok(res.statusCode ?? 0));
    });
    req.on('error', fail);
    req.end();
  });
}

/** Lanes of requests one after another until the host goes away; when each 200 arrived (performance.now()). */
async function charge(port: number, token: string, lanes: number): Promise<number[]> {
  const answered: number[] = [];
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (;;) {
        const status = await get(port, token).catch(() => 0);
        // Refused, or Fastify's 503 to a request that arrives while it closes (before any route runs).
        if (status === 0 || status === 503) return;
        expect(status).toBe(200);
        answered.push(performance.now());
      }
    }),
  );
  return answered;
}

describe('a host charging on leases, stopped while it charges', () => {
  let db: TestDatabase;
  let seed: Seeder;
  beforeAll(async () => {
    db = await createTestDatabase();
    seed = new Seeder(db.pool);
  });
  afterAll(async () => db?.drop());

  const counted = async (orgId: string) => {
    const { rows } = await db.pool.query(
      `SELECT coalesce((SELECT asks FROM usage_counters WHERE org_id = $1), 0) AS asks,
              (SELECT coalesce(sum(asks), 0)::int FROM usage_attribution WHERE org_id = $1) AS attributed`,
      [orgId],
    );
    return rows[0] as { asks: number; attributed: number };
  };

  it('loses no count on SIGTERM and leaves no block held', async () => {
    const w = await seed.world('owner', 'pro');
    const host = await startHost(db.url);
    const charging = charge(host.port, w.session, 8);
    await new Promise((r) => setTimeout(r, 1500));
    host.child.kill('SIGTERM');
    const answered = await charging;
    await host.exited;

    expect(answered.length).toBeGreaterThan(50);
    expect(await counted(w.orgId)).toEqual({ asks: answered.length, attributed: answered.length });
    const { rows } = await db.pool.query(
      `SELECT coalesce(sum(held), 0)::int AS held FROM usage_leases WHERE org_id = $1`,
      [w.orgId],
    );
    expect(rows[0].held).toBe(0);
  }, 30_000);

  it('on kill -9 loses at most what it charged in its last flush interval, and its block lapses with its lease', async () => {
    const w = await seed.world('owner', 'pro');
    const host = await startHost(db.url);
    const charging = charge(host.port, w.session, 8);
    await new Promise((r) => setTimeout(r, 4000));
    const killedAt = performance.now();
    host.child.kill('SIGKILL');
    const answered = await charging;
    await host.exited;

    const { asks, attributed } = await counted(w.orgId);
    const lost = answered.length - asks;
    // The last flush interval, and the write that was on its way when the process died.
    const lastInterval = answered.filter((t) => t > killedAt - COUNTER_FLUSH_MS - 500).length;
    expect(asks).toBeGreaterThan(0);
    expect(attributed).toBe(asks);
    expect(lost).toBeLessThanOrEqual(lastInterval);
    // Never more than was charged: at most the requests charged whose answer the kill cut off (one per lane).
    expect(lost).toBeGreaterThanOrEqual(-8);
    // The block it held is still there, and lapses within the lease's length (database time).
    const { rows } = await db.pool.query(
      `SELECT held, extract(epoch FROM expires_at - now()) * 1000 AS left_ms FROM usage_leases WHERE org_id = $1`,
      [w.orgId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].held).toBeGreaterThan(0);
    expect(Number(rows[0].left_ms)).toBeLessThanOrEqual(METER_LEASE_TTL_MS);
  }, 30_000);

  it('frees a killed instance’s block when its lease lapses: another instance then gets all the limit has left', async () => {
    const w = await seed.world('owner'); // free: a wallet of 100 a day
    const host = await startHost(db.url);
    for (let i = 0; i < 30; i++) expect(await get(host.port, w.session)).toBe(200);
    host.child.kill('SIGKILL');
    await host.exited;
    const { asks: countedBeforeKill } = await counted(w.orgId);
    const { rows } = await db.pool.query(
      `SELECT coalesce(sum(held), 0)::int AS held FROM usage_leases WHERE org_id = $1 AND expires_at > now()`,
      [w.orgId],
    );
    // Its block (unspent, and spent but not yet counted) still holds capacity: it never passes the limit.
    expect(countedBeforeKill + rows[0].held).toBeGreaterThanOrEqual(30);

    // The lease lapses (15 s after its last renewal; here at once).
    await db.pool.query(`UPDATE usage_leases SET expires_at = now() - interval '1 second' WHERE org_id = $1`, [
      w.orgId,
    ]);
    const survivor = await startChargingHost(db, new SystemClock(), [AskController], { usage: { charging: 'leased' } });
    try {
      const statuses = [];
      for (let i = 0; i < 101; i++) statuses.push((await survivor.api.get('/host/ask', w.session)).status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(100 - countedBeforeKill);
      expect(statuses.at(-1)).toBe(429);
    } finally {
      await survivor.close();
    }
  }, 30_000);
});
