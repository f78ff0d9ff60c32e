import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discardUnsafeReleases } from '../../src/database/pg-pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

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
