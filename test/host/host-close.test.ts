import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import { ExportsController, PLATFORMS, startHost } from './support/host-app.js';

let db: TestDatabase;
beforeAll(async () => ({ db } = await createSeededDatabase()));
afterAll(async () => db?.drop());

/** The backends connected to the test database. */
async function connected(): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1`, [
    db.name,
  ]);
  return rows.map((r) => r.pid);
}

/** Every connection to the test database before a host starts (this test's own pool's). */
const ownConnections = async () => new Set(await connected());
/** The connections other than `own`. */
const hostConnections = async (own: Set<number>) => (await connected()).filter((pid) => !own.has(pid)).length;

/**
 * A monolith's test suite boots and closes its app many times: every connection the library
 * opens (the host's pool's, the verification cache's LISTEN connection) must be closed with it.
 */
describe.each(PLATFORMS)('a host on %s', (platform) => {
  it('leaves no PostgreSQL connection open once closed', async () => {
    const own = await ownConnections();
    const host = await startHost({ platform, databaseUrl: db.url });
    expect((await host.api.get('/health')).status).toBe(200);
    expect(await hostConnections(own)).toBeGreaterThan(0);
    await host.close();
    await expect.poll(() => hostConnections(own), { timeout: 10_000, interval: 50 }).toBe(0);
  });

  it('leaves no PostgreSQL connection open when its boot is refused', async () => {
    const own = await ownConnections();
    await expect(startHost({ platform, databaseUrl: db.url, hostControllers: [ExportsController] })).rejects.toThrow(
      /exports:run/,
    );
    await expect.poll(() => hostConnections(own), { timeout: 10_000, interval: 50 }).toBe(0);
  });
});
