import { beforeEach, describe, expect, it } from 'vitest';
import { serviceRoleWorld } from '../support/database.js';

const DAY = 86_400_000;
const APPEND_ONLY = /append-only/;
const NOT_ALLOWED = /permission denied|must be owner/;

/**
 * The audit log against the service's own database role: the migrations' owner (here the test
 * server's superuser) owns everything, the service connects as a role granted by grantServiceRole.
 */
describe('the audit log under the service role', () => {
  const w = serviceRoleWorld('svc');

  /** An event `daysAgo` old, appended by the w.service itself. */
  async function event(daysAgo: number): Promise<string> {
    const { rows } = await w.service.query<{ id: string }>(
      `INSERT INTO audit_events (created_at, org_id, action, actor_type, target_type, target_id, details)
       VALUES ($1, $2, 'api_key.created', 'system', 'api_key', gen_random_uuid(), '{}') RETURNING id`,
      [new Date(Date.now() - daysAgo * DAY), w.orgId],
    );
    return rows[0].id;
  }
  const left = async (ids: string[]) =>
    (await w.db.pool.query<{ id: string }>(`SELECT id FROM audit_events WHERE id = ANY($1::uuid[])`, [ids])).rows
      .map((r) => r.id)
      .sort();

  beforeEach(async () => {
    // Each case starts from no events older than a day (the w.owner's own retention through the function).
    await w.db.pool.query(`SELECT audit_prune(now(), 10000)`);
  });

  it('may append and read events, and do its work on the other tables', async () => {
    const id = await event(0);
    expect((await w.service.query(`SELECT id FROM audit_events WHERE id = $1`, [id])).rowCount).toBe(1);
    await w.service.query(`UPDATE orgs SET plan = 'pro' WHERE id = $1`, [w.orgId]);
    expect((await w.service.query(`SELECT count(*)::int AS n FROM migrations`)).rows[0].n).toBeGreaterThan(0);
    await expect(w.service.query(`DELETE FROM migrations`)).rejects.toThrow(NOT_ALLOWED);
  });

  it('cannot delete, update or truncate a recent event by any means', async () => {
    const id = await event(1);
    const attempts = [
      `DELETE FROM audit_events WHERE id = '${id}'`,
      `BEGIN; SELECT set_config('audit.retention', 'on', true); DELETE FROM audit_events WHERE id = '${id}'; COMMIT`,
      `SET audit.retention = 'on'; DELETE FROM audit_events WHERE id = '${id}'`,
      `UPDATE audit_events SET action = 'api_key.revoked' WHERE id = '${id}'`,
      `TRUNCATE audit_events`,
      `ALTER TABLE audit_events DISABLE TRIGGER ALL`,
      `ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only`,
      `DROP TRIGGER audit_events_append_only ON audit_events`,
      `ALTER TABLE audit_events OWNER TO ${w.role}`,
      `DROP TABLE audit_events`,
      `CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$`,
      `CREATE OR REPLACE FUNCTION audit_prune(timestamptz, integer) RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$`,
      `SET session_replication_role = replica; DELETE FROM audit_events WHERE id = '${id}'`,
    ];
    for (const sql of attempts) {
      const client = await w.service.connect();
      try {
        await expect(client.query(sql), sql).rejects.toThrow(NOT_ALLOWED);
        await client.query('ROLLBACK').catch(() => undefined);
      } finally {
        client.release(true);
      }
    }
    // Through the retention function, asked for everything: still there.
    await w.service.query(`SELECT audit_prune(now() + interval '10 years', 10000)`);
    expect(await left([id])).toEqual([id]);
  });

  it('prunes through audit_prune only events older than both the cutoff and 30 days, in bounded batches', async () => {
    const [recent, month, old1, old2, ancient] = [
      await event(29),
      await event(31),
      await event(200),
      await event(201),
      await event(500),
    ];
    const all = [recent, month, old1, old2, ancient];
    const prune = async (cutoffDaysAgo: number, batch: number) =>
      (
        await w.service.query<{ n: number }>(`SELECT audit_prune($1, $2) AS n`, [
          new Date(Date.now() - cutoffDaysAgo * DAY),
          batch,
        ])
      ).rows[0].n;
    expect(await prune(300, 100)).toBe(1);
    expect(await left(all)).toEqual([recent, month, old1, old2].sort());
    expect(await prune(100, 1)).toBe(1); // one bounded batch, oldest first
    expect(await left(all)).toEqual([recent, month, old1].sort());
    expect(await prune(-3650, 100)).toBe(2); // a cutoff in the future stops at the 30-day floor
    expect(await left(all)).toEqual([recent]);
    await expect(w.service.query(`SELECT audit_prune(NULL, 10)`)).rejects.toThrow(/cutoff must be set/);
    await expect(w.service.query(`SELECT audit_prune(now(), 0)`)).rejects.toThrow(/batch_size between/);
  });

  it('still cannot delete or change an event itself when granted DELETE, UPDATE and TRUNCATE by mistake', async () => {
    const [recent, old] = [await event(1), await event(400)];
    await w.db.pool.query(`GRANT UPDATE, DELETE, TRUNCATE ON audit_events TO ${w.role}`);
    try {
      await expect(w.service.query(`DELETE FROM audit_events WHERE id = $1`, [old])).rejects.toThrow(APPEND_ONLY);
      await expect(
        w.service.query(
          `SELECT set_config('audit.retention', 'on', false); DELETE FROM audit_events WHERE id = '${recent}'`,
        ),
      ).rejects.toThrow(APPEND_ONLY);
      await expect(w.service.query(`UPDATE audit_events SET details = '{}' WHERE id = $1`, [old])).rejects.toThrow(
        APPEND_ONLY,
      );
      await expect(w.service.query(`TRUNCATE audit_events`)).rejects.toThrow(APPEND_ONLY);
    } finally {
      await w.db.pool.query(`REVOKE UPDATE, DELETE, TRUNCATE ON audit_events FROM ${w.role}`);
    }
    expect(await left([recent, old])).toEqual([recent, old].sort());
  });

  it('refuses the w.owner too a direct DELETE of an event younger than 30 days, an UPDATE and a TRUNCATE', async () => {
    const id = await event(10);
    await expect(w.db.pool.query(`DELETE FROM audit_events WHERE id = $1`, [id])).rejects.toThrow(APPEND_ONLY);
    await expect(w.db.pool.query(`UPDATE audit_events SET details = '{}' WHERE id = $1`, [id])).rejects.toThrow(
      APPEND_ONLY,
    );
    await expect(w.db.pool.query(`TRUNCATE audit_events`)).rejects.toThrow(APPEND_ONLY);
    expect(await left([id])).toEqual([id]);
  });
});
