import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** Makes the test database refuse connections and drops the ones it has: an outage, as the app sees it. */
async function setReachable(name: string, reachable: boolean): Promise<void> {
  const admin = new pg.Client({ connectionString: inject('dbAdminUrl') });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS ${reachable}`);
    if (!reachable) {
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [name],
      );
    }
  } finally {
    await admin.end();
  }
}

describe('health probes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    if (t) await setReachable(t.db.name, true);
    await t?.close();
  });

  it('answers liveness and readiness without any credential while the database is up', async () => {
    const live = await t.api.get('/health/live');
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ status: 'ok' });
    const ready = await t.api.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', details: { database: { status: 'up' } } });
    expect(ready.headers.get('cache-control')).toMatch(/no-store/);
  });

  it('reports not ready (503) while the database is unreachable, stays live, and recovers', async () => {
    await setReachable(t.db.name, false);
    try {
      const ready = await t.api.get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({
        status: 'error',
        info: {},
        error: { database: { status: 'down' } },
        details: { database: { status: 'down' } },
      });
      // The driver's message (hosts, ports, database names) stays in the logs, not in an unauthenticated body.
      expect(ready.text).not.toContain(t.db.name);
      const live = await t.api.get('/health/live');
      expect(live.status).toBe(200);
    } finally {
      await setReachable(t.db.name, true);
    }
    const again = await t.api.get('/health/ready');
    expect(again.status).toBe(200);
  });
});
