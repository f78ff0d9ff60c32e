import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import type { Seeder } from '../support/seed.js';

/** The change notifications the verification cache's triggers send, as a LISTENing instance receives them. */
describe('verification change notifications', () => {
  let db: TestDatabase;
  let seed: Seeder;
  let listener: pg.Client;
  let received: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    ({ db, seed } = await createSeededDatabase());
    listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    listener.on('notification', (m) => received.push(JSON.parse(m.payload ?? '')));
    await listener.query('LISTEN kui_verification');
  });
  afterAll(async () => {
    await listener?.end();
    await db?.drop();
  });

  /** Runs `change`, then returns the notifications it caused (a round trip on the listener flushes them). */
  async function notified(change: () => Promise<unknown>) {
    await listener.query('SELECT 1');
    received = [];
    await change();
    await listener.query('SELECT 1');
    return received.map(({ s, ...rest }) => (expect(typeof s).toBe('number'), rest));
  }

  it('name both the old and the new pair when an UPDATE moves a membership to another org or user', async () => {
    const w = await seed.world('owner');
    const otherOrg = await seed.org();
    const otherUser = await seed.user();
    expect(
      await notified(() =>
        db.pool.query(`UPDATE memberships SET org_id = $1 WHERE user_id = $2`, [otherOrg, w.userId]),
      ),
    ).toEqual(
      expect.arrayContaining([
        { k: null, u: w.userId, o: otherOrg },
        { k: null, u: w.userId, o: w.orgId },
      ]),
    );
    expect(
      await notified(() =>
        db.pool.query(`UPDATE memberships SET user_id = $1 WHERE user_id = $2`, [otherUser.id, w.userId]),
      ),
    ).toEqual(
      expect.arrayContaining([
        { k: null, u: otherUser.id, o: otherOrg },
        { k: null, u: w.userId, o: otherOrg },
      ]),
    );
  });

  it('name a pair once, under one sequence number, when an UPDATE leaves it where it was', async () => {
    const w = await seed.world('owner');
    expect(
      await notified(() => db.pool.query(`UPDATE memberships SET role = 'viewer' WHERE user_id = $1`, [w.userId])),
    ).toEqual([{ k: null, u: w.userId, o: w.orgId }]);
  });

  it('tell every instance to drop everything on a TRUNCATE of any table a cached answer is built from', async () => {
    await seed.world('owner');
    expect(await notified(() => db.pool.query(`TRUNCATE memberships`))).toEqual([{ a: true }]);
    expect(await notified(() => db.pool.query(`TRUNCATE api_keys CASCADE`))).toContainEqual({ a: true });
  });

  it('hand out sequence numbers in commit order, one per notification', async () => {
    const before = (await db.pool.query(`SELECT seq::int FROM verification_invalidations`)).rows[0].seq as number;
    await listener.query('SELECT 1');
    received = [];
    const w = await seed.world('owner');
    await db.pool.query(`UPDATE memberships SET org_id = $1 WHERE user_id = $2`, [await seed.org(), w.userId]);
    await listener.query('SELECT 1');
    const after = (await db.pool.query(`SELECT seq::int FROM verification_invalidations`)).rows[0].seq as number;
    expect(received.map((m) => m.s)).toEqual(Array.from({ length: after - before }, (_, i) => before + i + 1));
  });
});
