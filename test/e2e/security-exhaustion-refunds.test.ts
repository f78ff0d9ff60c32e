import { ModulesContainer } from '@nestjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { PendingRefunds } from '../../src/usage/pending-refunds.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: refunds across a database outage: kept, shown in /metrics, and landed (also on shutdown).
 */

// Refunds kept through an outage are the exact path's (PendingRefunds); leased charging gives a refund
// before the handler back to the instance's block and its pending count, with no database write.

describe('refunds that land', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await TcpProxy.start(db.url);
    t = await startTestApp({
      db: { ...db, url: proxy.urlFor(db.url) },
      env: { DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '1000', USAGE_CHARGING: 'exact' },
    });
  });
  afterAll(async () => {
    await proxy.restore();
    await t?.close();
    await proxy?.close();
    await db?.drop();
  });

  const captures = async (orgId: string) =>
    (await db.pool.query<{ captures: number }>(`SELECT captures FROM usage_counters WHERE org_id = $1`, [orgId]))
      .rows[0]?.captures ?? 0;

  it('keeps 10 refunds made while the database is cut, shows them in /metrics, and lands every one once it is back', async () => {
    const w = await t.seed.world('owner');
    const usage = t.app.get(UsageService);
    const charges = [];
    for (let i = 0; i < 10; i++) charges.push(await usage.charge(w.orgId, 'captures', 1));
    expect(await captures(w.orgId)).toBe(10);

    await proxy.refuse();
    for (const charge of charges) await usage.refundEventually(charge);
    const metrics = await t.app.get(MetricsService).render();
    expect(metrics).toMatch(/^usage_refunds_pending 1$/m); // ten refunds of one org, day and meter: one entry
    expect(await captures(w.orgId), 'nothing landed during the outage').toBe(10);

    await proxy.restore();
    await expect
      .poll(() => captures(w.orgId), { timeout: 15_000, interval: 50, message: 'refunds landed after the outage' })
      .toBe(0);
    expect(await t.app.get(MetricsService).render()).toMatch(/^usage_refunds_pending 0$/m);
  });

  it('holds one refund queue in the process, though the app builds UsageModule twice (its routes and the library)', () => {
    const instances = (token: unknown) =>
      [...t.app.get(ModulesContainer).values()].flatMap((m) => {
        const instance: unknown = m.providers.get(token as never)?.instance;
        return instance ? [instance] : [];
      });
    expect(instances(UsageService)).toHaveLength(2);
    // So settle() on either copy of UsageService waits for the refunds the other gave back.
    expect(instances(PendingRefunds)).toHaveLength(1);
  });
});

describe('refunds flushed on shutdown', () => {
  it('lands a refund kept during an outage when the app is closed (SIGTERM), before the pool closes', async () => {
    const db = await createTestDatabase();
    const proxy = await TcpProxy.start(db.url);
    const t = await startTestApp({
      db: { ...db, url: proxy.urlFor(db.url) },
      env: { DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '1000', USAGE_CHARGING: 'exact' },
    });
    try {
      const w = await t.seed.world('owner');
      const usage = t.app.get(UsageService);
      const charge = await usage.charge(w.orgId, 'captures', 3);
      await proxy.refuse();
      await usage.refundEventually(charge);
      await proxy.restore();
      await t.app.close(); // what enableShutdownHooks runs on SIGTERM
      const { rows } = await db.pool.query(`SELECT captures FROM usage_counters WHERE org_id = $1`, [w.orgId]);
      expect(rows[0].captures).toBe(0);
    } finally {
      await proxy.close();
      await db.drop();
    }
  });
});
