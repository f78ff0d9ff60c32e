import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { postgresOptions } from '../../src/database/data-source-options.js';
import { discardUnsafeReleases } from '../../src/database/pg-pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testConfig } from '../support/test-config.js';

/**
 * TypeORM releases a query runner without an error even when its ROLLBACK failed (after a
 * query_timeout, say), so the pool would hand out a client still inside a transaction, or with a
 * statement still on the wire; an autocommit statement on it would then never commit.
 */
describe('discardUnsafeReleases: a client released mid-transaction or mid-statement is not reused', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query('CREATE TABLE hygiene (n int)');
  });
  afterAll(async () => db?.drop());

  const visible = async () =>
    (await db.pool.query<{ n: number }>('SELECT n FROM hygiene ORDER BY n')).rows.map((r) => r.n);

  async function releasedInTransaction(pool: pg.Pool, n: number): Promise<void> {
    const client = await pool.connect();
    await client.query('BEGIN');
    client.release(); // as TypeORM does when the ROLLBACK after a timeout failed
    // The next autocommit statement gets the one client of the pool.
    await pool.query('INSERT INTO hygiene (n) VALUES ($1)', [n]);
  }

  it('without it, the next autocommit statement runs inside the forgotten transaction and is never seen', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      await releasedInTransaction(pool, 1);
      expect(await visible()).not.toContain(1);
    } finally {
      await pool.end();
    }
    expect(await visible()).not.toContain(1); // rolled back when the connection closed
  });

  it('with it, the client is ended and the statement runs on a fresh one, committed', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    discardUnsafeReleases(pool);
    try {
      await releasedInTransaction(pool, 2);
      expect(await visible()).toContain(2);
    } finally {
      await pool.end();
    }
  });

  it('with it, a client released while a statement is still running is ended, not handed out again', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    discardUnsafeReleases(pool);
    const removed = new Promise<void>((r) => pool.once('remove', () => r()));
    try {
      const client = await pool.connect();
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      const sleeping = client.query('SELECT pg_sleep(5)').catch(() => undefined);
      client.release();
      await removed;
      const next = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      expect(next).not.toBe(pid);
      await sleeping;
    } finally {
      await pool.end();
    }
  });

  it('keeps a client released cleanly', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    discardUnsafeReleases(pool);
    try {
      const client = await pool.connect();
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      client.release();
      const next = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      expect(next).toBe(pid);
    } finally {
      await pool.end();
    }
  });
});

/**
 * node-postgres waits for a free pooled connection under the same setting as for opening one. A
 * healthy database under a burst keeps every connection busy for a moment: the requests queued
 * behind them must wait for a connection (DB_POOL_ACQUIRE_TIMEOUT_MS), not fail as an outage after
 * the connect timeout; opening a connection to a database that does not answer still fails fast.
 */
describe('postgresOptions: the wait for a busy pool and the connect timeout are separate', () => {
  let db: TestDatabase;
  let proxy: TcpProxy | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  const open = (url: string) =>
    new DataSource(
      postgresOptions(testConfig(url, { DB_POOL_MAX: '1', DB_POOL_MIN: '0', DB_CONNECT_TIMEOUT_MS: '200' }), url),
    ).initialize();

  it('queues a statement behind a connection busy for longer than the connect timeout, and runs it', async () => {
    const source = await open(db.url);
    try {
      const busy = source.query('SELECT pg_sleep(0.8)');
      const started = Date.now();
      const queued = await source.query<Array<{ one: number }>>('SELECT 1 AS one');
      expect(queued[0].one).toBe(1);
      expect(Date.now() - started).toBeGreaterThanOrEqual(600);
      await busy;
    } finally {
      await source.destroy();
    }
  });

  it('still gives up on opening a connection to a database that does not answer after the connect timeout', async () => {
    proxy = await TcpProxy.start(db.url);
    proxy.blackhole();
    const started = Date.now();
    await expect(open(proxy.urlFor(db.url))).rejects.toThrow(/timeout/i);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
