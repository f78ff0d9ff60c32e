import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageService } from '../../src/usage/usage.service.js';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { TestClock } from '../support/clock.js';
import { runCli } from '../support/processes.js';
import { TEST_SESSION_SECRET } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { WEBHOOK_TEST_ENV, WebhookReceiver } from '../support/webhook-receiver.js';

const DAY_MS = 86_400_000;

describe('the event catalogue: thresholds and expiry', () => {
  let t: TestApp;
  const clock = new TestClock('2031-05-17T08:30:00.000Z');
  const receiver = new WebhookReceiver();
  let url: string;

  beforeAll(async () => {
    url = await receiver.start();
    t = await startTestApp({ clock, env: WEBHOOK_TEST_ENV });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.stop();
  });

  async function subscribed(types: string[]) {
    const w = await t.seed.world('owner');
    const hook = await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: types });
    expect(hook.status).toBe(201);
    receiver.secret = hook.body.secret;
    return w;
  }
  const forOrg = (type: string, orgId: string) =>
    receiver.ofType(type).filter((r) => r.verified!.data.org_id === orgId);

  it('usage.threshold fires at 80 % and 100 % of a daily limit, once per org, meter and day', async () => {
    const w = await subscribed(['usage.threshold']);
    const usage = t.app.get(UsageService);
    // Each charge written before the next (leased charging counts behind the answers), so each crosses on its own.
    const charged = async (meter: string, count: number) => {
      const charge = await usage.charge(w.orgId, meter, count);
      await usage.settle();
      return charge;
    };
    await charged('captures', 79); // free plan: 100 captures a day
    await charged('captures', 1); // 80 %
    await charged('captures', 5);
    await charged('asks', 90); // the query wallet (asks + retrieves): 90 %, crossing 80 at once
    await charged('captures', 15); // 100 %
    await expect(usage.charge(w.orgId, 'captures', 1)).rejects.toThrow();
    await receiver.until(() => forOrg('usage.threshold', w.orgId).length === 3);
    const seen = forOrg('usage.threshold', w.orgId).map((r) => r.verified!.data);
    expect(seen).toEqual(
      expect.arrayContaining([
        {
          org_id: w.orgId,
          meter: 'captures',
          threshold: 80,
          used: 80,
          limit: 100,
          day: '2031-05-17',
          resets_at: '2031-05-18T00:00:00.000Z',
        },
        {
          org_id: w.orgId,
          meter: 'captures',
          threshold: 100,
          used: 100,
          limit: 100,
          day: '2031-05-17',
          resets_at: '2031-05-18T00:00:00.000Z',
        },
        {
          org_id: w.orgId,
          meter: 'mcp_queries',
          threshold: 80,
          used: 90,
          limit: 100,
          day: '2031-05-17',
          resets_at: '2031-05-18T00:00:00.000Z',
        },
      ]),
    );
    // Once per day: a refund and a new charge across the line again raise nothing more.
    const charge = await charged('asks', 1);
    await usage.refund(charge);
    await usage.refund({ ...charge, count: 20 });
    await charged('asks', 20);
    const { rows } = await t.db.pool.query(
      `SELECT count(*)::int AS n FROM event_marks WHERE kind = 'usage_threshold' AND subject LIKE $1`,
      [`${w.orgId}%`],
    );
    expect(rows[0].n).toBe(3);
  });

  it('api_key.expiring (7 days and 1 day ahead) and api_key.expired come from the scheduled scan, each once', async () => {
    const w = await subscribed(['api_key.expiring', 'api_key.expired']);
    const week = (await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'week', expires_in_days: 7 })).body;
    const month = (await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'month', expires_in_days: 30 }))
      .body;
    const revoked = (await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'gone', expires_in_days: 1 }))
      .body;
    const soon = (await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'soon', expires_in_days: 1 })).body;
    await t.api.delete(`/api-keys/${revoked.id}`, w.session);
    const dispatcher = t.app.get(WebhookDispatcher);

    await dispatcher.scanExpiries();
    await dispatcher.scanExpiries(); // a second scan (another instance, the next tick) emits nothing again
    await receiver.until(() => forOrg('api_key.expiring', w.orgId).length >= 1);
    clock.advance(6 * DAY_MS + 1000); // within a day of `week`'s expiry
    await dispatcher.scanExpiries();
    await receiver.until(() => forOrg('api_key.expiring', w.orgId).length >= 3);
    clock.advance(DAY_MS); // past it
    await dispatcher.scanExpiries();
    await receiver.until(() => forOrg('api_key.expired', w.orgId).length >= 2);
    await dispatcher.scanExpiries();

    const named = (type: string, name: string) =>
      forOrg(type, w.orgId)
        .filter((r) => r.verified!.data.name === name)
        .map((r) => r.verified!.data);
    expect(named('api_key.expiring', 'week').map((d) => d.window)).toEqual(['7d', '1d']);
    const expired = named('api_key.expired', 'week');
    expect(expired).toHaveLength(1);
    expect(expired[0]).toMatchObject({
      id: week.id,
      name: 'week',
      lookup: week.lookup,
      last4: week.last4,
      expires_at: week.expires_at,
    });
    expect(receiver.received.some((r) => r.body.includes(month.id) || r.body.includes(revoked.id))).toBe(false);
    expect(receiver.received.some((r) => r.body.includes(soon.id) && r.verified!.data.window === '7d')).toBe(false);
    expect(receiver.received.some((r) => r.body.includes(soon.id) && r.verified!.data.window === '1d')).toBe(true);
  });

  it('api_key.rotated from rotation, api_key.revoked from an admin revoke, member.removed from the operator CLI', async () => {
    const w = await subscribed(['api_key.rotated', 'api_key.revoked', 'member.removed']);
    const key = (await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'r' })).body;
    const rotated = await t.api.post(`/api-keys/${key.id}/rotate`, w.session, { grace_period_seconds: 60 });
    expect(rotated.status).toBe(201);
    await receiver.until(() => forOrg('api_key.rotated', w.orgId).length === 1);
    const data = forOrg('api_key.rotated', w.orgId)[0].verified!.data;
    expect(data).toMatchObject({ id: key.id, lookup: rotated.body.lookup, previous_lookup: key.lookup });
    expect(JSON.stringify(data)).not.toContain(rotated.body.key);

    expect((await t.api.delete(`/orgs/${w.orgId}/api-keys/${key.id}`, w.session)).status).toBe(204);
    await receiver.until(() => forOrg('api_key.revoked', w.orgId).length === 1);
    expect(forOrg('api_key.revoked', w.orgId)[0].verified!.data).toMatchObject({ id: key.id, revoked_by: w.userId });

    const leaver = await t.seed.user();
    await t.seed.member(w.orgId, leaver.id, 'member');
    const removed = await runCli(['member', 'remove', '--org', w.orgId, '--user', leaver.id], {
      DATABASE_URL: t.db.url,
      NODE_ENV: 'test',
      SESSION_JWT_SECRET: TEST_SESSION_SECRET,
      DB_MIGRATE: 'false',
    });
    expect(removed.code, removed.stderr).toBe(0);
    // Written by the CLI process, delivered by the server's relay.
    await receiver.until(() => forOrg('member.removed', w.orgId).length === 1);
    expect(forOrg('member.removed', w.orgId)[0].verified!.data).toMatchObject({
      org_id: w.orgId,
      user_id: leaver.id,
      role: 'member',
    });
  }, 60_000);

  it("the scheduled scan also prunes delivery attempts after 30 days and past days' threshold marks", async () => {
    const w = await subscribed(['api_key.created']);
    const hook = (await t.api.get(`/orgs/${w.orgId}/webhooks`, w.session)).body.webhooks[0].id;
    const insert = (days: number) =>
      t.db.pool.query(
        `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, job_id, attempt, status, latency_ms, created_at)
       VALUES ($1, gen_random_uuid(), 'api_key.created', gen_random_uuid(), 1, 'succeeded', 5, $2)`,
        [hook, new Date(clock.now().getTime() - days * DAY_MS)],
      );
    await insert(31);
    await insert(29);
    await t.db.pool.query(
      `INSERT INTO event_marks (kind, subject, mark, created_at) VALUES ('usage_threshold', 'x', '80', $1), ('key_expiry', 'y', '7d', $1)`,
      [new Date(clock.now().getTime() - 3 * DAY_MS)],
    );
    await t.app.get(WebhookDispatcher).scanExpiries();
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1`, [
      hook,
    ]);
    expect(rows[0].n).toBe(1);
    const marks = await t.db.pool.query(`SELECT kind FROM event_marks WHERE subject IN ('x', 'y')`);
    expect(marks.rows).toEqual([{ kind: 'key_expiry' }]);
  });

  it('the scan is a pg-boss schedule', async () => {
    const { rows } = await t.db.pool.query(`SELECT name, cron FROM pgboss.schedule`);
    expect(rows).toEqual([{ name: 'events-expiry-scan', cron: '*/5 * * * *' }]);
  });
});
