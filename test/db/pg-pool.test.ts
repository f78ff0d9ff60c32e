import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { postgresOptions } from '../../src/database/data-source-options.js';
import { adaptToTransactionPooler, discardUnsafeReleases } from '../../src/database/pg-pool.js';
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
 * Behind a transaction pooler (PgBouncer pool_mode = transaction) a session's state is not ours:
 * a statement prepared on one server connection is unknown on the next, and startup parameters
 * are refused. The pool then runs its statements unnamed and carries its timeouts per transaction.
 */
describe('adaptToTransactionPooler: no named statements, timeouts per transaction', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db?.drop());

  const prepared = async (client: pg.PoolClient) =>
    (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows[0].n;

  it('without it, a named statement stays prepared in the server session (a pooler would lose it)', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      await pool.query({ name: 'kui_test_named', text: 'SELECT $1::int AS n', values: [1] });
      const client = await pool.connect();
      expect(await prepared(client)).toBe(1);
      client.release();
    } finally {
      await pool.end();
    }
  });

  it('with named statements off, the same query runs unnamed, on clients opened before and after', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      const early = await pool.connect(); // open before the adaptation, as TypeORM's first connection is
      early.release();
      adaptToTransactionPooler(pool, { namedStatements: false, transactionTimeouts: null });
      const rows = await Promise.all(
        [1, 2, 3].map(
          async (n) => (await pool.query({ name: 'kui_test_named', text: 'SELECT $1::int AS n', values: [n] })).rows[0],
        ),
      );
      expect(rows).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      const a = await pool.connect();
      const b = await pool.connect();
      expect(await prepared(a)).toBe(0);
      expect(await prepared(b)).toBe(0);
      await a.query({ name: 'kui_test_named_2', text: 'SELECT 1' });
      expect(await prepared(a)).toBe(0);
      a.release();
      b.release();
    } finally {
      await pool.end();
    }
  });

  it('with timeouts, every transaction has them (SET LOCAL), and nothing outside one does', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    adaptToTransactionPooler(pool, {
      namedStatements: true,
      transactionTimeouts: { statementMs: 1234, idleInTransactionMs: 4321 },
    });
    const show = async (client: pg.PoolClient) =>
      (
        await client.query<{ s: string; i: string }>(
          "SELECT current_setting('statement_timeout') AS s, current_setting('idle_in_transaction_session_timeout') AS i",
        )
      ).rows[0];
    try {
      const client = await pool.connect();
      try {
        const outside = await show(client);
        for (const begin of ['BEGIN', 'START TRANSACTION', 'begin;']) {
          const result = await client.query(begin);
          expect(result.command).toBe(begin.toLowerCase().startsWith('begin') ? 'BEGIN' : 'START');
          // As TypeORM does right after START TRANSACTION: still allowed (SET takes no snapshot).
          await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
          expect(await show(client)).toEqual({ s: '1234ms', i: '4321ms' });
          await client.query('COMMIT');
          expect(await show(client)).toEqual(outside);
        }
        // The callback form of pg's API gets the BEGIN's own result too.
        const viaCallback = await new Promise<string>((ok, fail) =>
          client.query('BEGIN', (err: Error | null, res: pg.QueryResult) => (err ? fail(err) : ok(res.command))),
        );
        expect(viaCallback).toBe('BEGIN');
        await expect(client.query('SELECT pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
        await client.query('ROLLBACK');
      } finally {
        client.release();
      }
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
