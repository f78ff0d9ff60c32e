import { Controller, Post } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { RequireScopes } from '../../src/auth/auth.decorators.js';
import {
  VERIFICATION_OUTCOMES,
  VerificationOutcomeRecorder,
  type Outcome,
} from '../../src/auth/verification-outcome-recorder.js';
import { PeriodicJobs } from '../../src/common/periodic-jobs.js';
import { parsePlanLimits } from '../../src/common/plan-limits.js';
import { Charges } from '../../src/usage/charges.decorator.js';
import { startChargingHost, type ChargingHost } from '../support/charging-host.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, insertKeyRow, Seeder, type TestDatabase } from '../support/factories.js';
import { ApiClient } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** Every outcome at 0 but those given: the shape each bucket answers. */
const outcomes = (of: Partial<Record<Outcome, number>>) =>
  Object.fromEntries(VERIFICATION_OUTCOMES.map((o) => [o, of[o] ?? 0]));

/**
 * Verification outcomes on the real app: keys used validly and refused for each reason the app
 * decides, then the three routes answer the buckets (per hour and per UTC day, for a key, for an
 * org admin, summed over the org); their 400s, 404s and 403s.
 */
describe('verification outcomes', () => {
  let t: TestApp;
  const clock = new TestClock('2031-05-01T10:15:00Z');
  let w: Awaited<ReturnType<TestApp['seed']['world']>>;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({ clock });
    w = await t.seed.world('owner');
    const mint = async (name: string, body: Record<string, unknown> = {}) => {
      const res = await t.api.post('/api-keys', w.session, {
        org_id: w.orgId,
        name,
        scopes: ['decisions:read'],
        ...body,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids[name] = res.body.id;
      return res.body.key as string;
    };
    const expectStatus = async (key: string, path: string, status: number) =>
      expect((await t.api.get(path, key)).status, `${path} ${key.slice(-4)}`).toBe(status);

    // 10:15 UTC
    const valid = await mint('valid');
    await expectStatus(valid, '/me', 200);
    await expectStatus(valid, '/usage', 200);
    const writer = await mint('writer', { scopes: ['decisions:write'] });
    await expectStatus(writer, '/usage', 403);
    await expectStatus(writer, '/me', 200);
    const limited = await mint('limited', { rate_limits: [{ name: 'default', limit: 1, window_seconds: 3600 }] });
    await expectStatus(limited, '/me', 200);
    await expectStatus(limited, '/me', 429);
    const credited = await mint('credited', { credits: { remaining: 1 } });
    await expectStatus(credited, '/me', 200);
    await expectStatus(credited, '/me', 429);
    const fenced = await mint('fenced', { allowed_cidrs: ['10.0.0.0/8'] });
    await expectStatus(fenced, '/me', 403);
    const revoked = await mint('revoked');
    await expectStatus(revoked, '/me', 200);
    expect((await t.api.delete(`/api-keys/${ids.revoked}`, w.session)).status).toBe(204);
    await expectStatus(revoked, '/me', 401);
    const disabled = await mint('disabled');
    expect(
      (await t.api.request('PATCH', `/api-keys/${ids.disabled}`, { token: w.session, body: { enabled: false } }))
        .status,
    ).toBe(200);
    await expectStatus(disabled, '/me', 401);
    const pending = await mint('pending');
    // Held for approval as the org's key policy would hold it at mint.
    await t.db.pool.query(`UPDATE api_keys SET approval = 'pending' WHERE id = $1`, [ids.pending]);
    await expectStatus(pending, '/me', 401);
    const expired = await insertKeyRow(t.db.pool, {
      userId: w.userId,
      orgId: w.orgId,
      expiresAt: new Date('2031-05-01T10:00:00Z'),
    });
    ids.expired = expired.id;
    await expectStatus(expired.key, '/me', 401);
    // A credential that names no key is nobody's outcome.
    await expectStatus(generateApiKey().key, '/me', 401);

    // 11:05 UTC, the next hour.
    clock.set('2031-05-01T11:05:00Z');
    await expectStatus(valid, '/me', 200);
    await expectStatus(revoked, '/me', 401);
    // Counted in memory as each request was decided; written now rather than at the recorder's next tick.
    await t.app.get(VerificationOutcomeRecorder).flush();
  });
  afterAll(async () => t?.close());

  const get = (path: string, token = w.session) => t.api.get(path, token);

  it("answers a key's outcomes per UTC hour and per day", async () => {
    const hourly = await get(`/api-keys/${ids.valid}/verifications?granularity=hour&from=2031-05-01&to=2031-05-01`);
    expect(hourly.status).toBe(200);
    expect(hourly.body).toEqual({
      granularity: 'hour',
      from: '2031-05-01',
      to: '2031-05-01',
      buckets: [
        { start: '2031-05-01T10:00:00.000Z', outcomes: outcomes({ valid: 2 }) },
        { start: '2031-05-01T11:00:00.000Z', outcomes: outcomes({ valid: 1 }) },
      ],
    });
    // The default: the 30 days up to today, per day.
    const daily = await get(`/api-keys/${ids.valid}/verifications`);
    expect(daily.status).toBe(200);
    expect(daily.body).toEqual({
      granularity: 'day',
      from: '2031-04-02',
      to: '2031-05-01',
      buckets: [{ start: '2031-05-01T00:00:00.000Z', outcomes: outcomes({ valid: 3 }) }],
    });
  });

  it('counts each request once, by its final decision: the key’s state, its network, its budgets, its scopes', async () => {
    const expected: Record<string, Partial<Record<Outcome, number>>> = {
      writer: { insufficient_scope: 1, valid: 1 },
      limited: { valid: 1, rate_limited: 1 },
      credited: { valid: 1, credits_exhausted: 1 },
      fenced: { ip_refused: 1 },
      revoked: { valid: 1, revoked: 2 },
      disabled: { disabled: 1 },
      pending: { pending: 1 },
      expired: { expired: 1 },
    };
    for (const [name, counted] of Object.entries(expected)) {
      const res = await get(`/api-keys/${ids[name]}/verifications?from=2031-05-01&to=2031-05-01`);
      expect(res.body.buckets, name).toEqual([{ start: '2031-05-01T00:00:00.000Z', outcomes: outcomes(counted) }]);
    }
  });

  it("sums every key of the org for its owners and admins, and shows an admin any key's outcomes", async () => {
    const admin = await t.seed.colleague(w.orgId, 'admin');
    const summary = await get(
      `/orgs/${w.orgId}/verifications?granularity=hour&from=2031-05-01&to=2031-05-01`,
      admin.session,
    );
    expect(summary.status).toBe(200);
    expect(summary.body.buckets).toEqual([
      {
        start: '2031-05-01T10:00:00.000Z',
        outcomes: outcomes({
          // valid twice, writer, limited, credited and revoked once each
          valid: 6,
          revoked: 1,
          expired: 1,
          disabled: 1,
          pending: 1,
          ip_refused: 1,
          rate_limited: 1,
          credits_exhausted: 1,
          insufficient_scope: 1,
        }),
      },
      { start: '2031-05-01T11:00:00.000Z', outcomes: outcomes({ valid: 1, revoked: 1 }) },
    ]);
    const one = await get(`/orgs/${w.orgId}/api-keys/${ids.fenced}/verifications?from=2031-05-01`, admin.session);
    expect(one.status).toBe(200);
    expect(one.body.buckets).toEqual([{ start: '2031-05-01T00:00:00.000Z', outcomes: outcomes({ ip_refused: 1 }) }]);
  });

  it('keeps hours 90 days and days as long as usage history (400 by default), pruned by the job verification-outcomes-retention', async () => {
    // Now is 2031-05-01T11:05Z: hours starting before 2031-01-31T11:05Z go, days before 2030-03-28 go.
    await t.db.pool.query(
      `INSERT INTO api_key_verification_hours (key_id, org_id, hour, valid) SELECT $1, $2, h::timestamptz, 1 FROM unnest($3::text[]) AS h`,
      [ids.valid, w.orgId, ['2031-01-31T10:00:00Z', '2031-01-31T11:00:00Z', '2031-01-31T12:00:00Z']],
    );
    await t.db.pool.query(
      `INSERT INTO api_key_verification_days (key_id, org_id, day, valid) SELECT $1, $2, d::date, 1 FROM unnest($3::text[]) AS d`,
      [ids.valid, w.orgId, ['2030-03-27', '2030-03-28']],
    );
    await t.app.get(PeriodicJobs).runNow('verification-outcomes-retention');
    const kept = await t.db.pool.query<{ at: string }>(
      `SELECT to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') AS at FROM api_key_verification_hours WHERE key_id = $1 AND hour < '2031-02-01'
        UNION ALL SELECT day::text FROM api_key_verification_days WHERE key_id = $1 AND day < '2030-04-01' ORDER BY 1`,
      [ids.valid],
    );
    expect(kept.rows.map((r) => r.at)).toEqual(['2030-03-28', '2031-01-31T12']);
  });

  it('refuses an unknown granularity and a range over 92 days or before the days kept with a 400 naming the field', async () => {
    const path = `/api-keys/${ids.valid}/verifications`;
    const refusals: Array<[string, string]> = [
      ['?granularity=minute', 'granularity must be one of hour, day'],
      ['?granularity=', 'granularity must be one of hour, day'],
      ['?from=2031-01-01&to=2031-05-01', 'at most 92 days'],
      ['?from=2031-05-02', 'from must not be after to'],
      ['?to=2031-05-02', 'to must not be after today'],
      ['?from=1 May', 'from must be a date in the form YYYY-MM-DD'],
      // Hours are kept 90 days; days as long as usage history.
      ['?granularity=hour&from=2031-01-31&to=2031-02-01', 'from must not be before 2031-02-01'],
    ];
    for (const [query, message] of refusals) {
      for (const route of [path, `/orgs/${w.orgId}/verifications`]) {
        const res = await get(`${route}${query}`);
        expect(res.status, `${route}${query}`).toBe(400);
        expect(res.body.message).toContain(message);
      }
    }
    expect((await get(`${path}?granularity=day&from=2031-01-31&to=2031-02-01`)).status).toBe(200);
    expect((await get(`/api-keys/not-a-key/verifications`)).status).toBe(400);
    expect((await get(`/orgs/not-an-org/verifications`)).body.message).toContain('org_id must be a UUID');
  });

  it('answers 404 for another user’s key (even an admin of another org), 403 to a member, and 403 to any API key', async () => {
    const other = await t.seed.world('owner');
    const key = `/api-keys/${ids.valid}/verifications`;
    expect((await get(key, other.session)).status).toBe(404);
    expect((await get(`/orgs/${other.orgId}/api-keys/${ids.valid}/verifications`, other.session)).status).toBe(404);
    expect((await get(`/orgs/${w.orgId}/verifications`, other.session)).status).toBe(404);
    // A colleague's key on the personal route is not theirs either, admin or not.
    const admin = await t.seed.colleague(w.orgId, 'admin');
    expect((await get(key, admin.session)).status).toBe(404);
    const member = await t.seed.colleague(w.orgId, 'member');
    expect((await get(`/orgs/${w.orgId}/verifications`, member.session)).status).toBe(403);
    expect((await get(`/orgs/${w.orgId}/api-keys/${ids.valid}/verifications`, member.session)).status).toBe(403);
    const own = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    for (const path of [
      key,
      `/orgs/${w.orgId}/api-keys/${ids.valid}/verifications`,
      `/orgs/${w.orgId}/verifications`,
    ]) {
      const res = await get(path, own.body.key);
      expect(res.status, path).toBe(403);
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
  });
});

/** A host's own route, charged with @Charges: the org's meter decides the outcome after the guards. */
@Controller('decisions')
class DecisionsController {
  @Post()
  @RequireScopes('decisions:write')
  @Charges('captures')
  capture(): { ok: true } {
    return { ok: true };
  }
}

describe('verification outcomes on a host route that charges the org’s meter', () => {
  let db: TestDatabase;
  let host: ChargingHost;
  let api: ApiClient;
  const clock = new TestClock('2031-05-01T10:15:00Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    host = await startChargingHost(db, clock, [DecisionsController], {
      planLimits: parsePlanLimits({ free: { captures: 2 } }),
    });
    api = host.api;
  });
  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  it('counts a request the meter refuses as usage_exceeded, not valid, and one it admits as valid, once each', async () => {
    const w = await new Seeder(db.pool).world('owner');
    const key = await insertKeyRow(db.pool, { userId: w.userId, orgId: w.orgId, scopes: ['decisions:write'] });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await api.post('/decisions', key.key, {})).status);
    expect(statuses).toEqual([201, 201, 429, 429]);
    await host.app.get(VerificationOutcomeRecorder).flush();
    const res = await api.get(`/api-keys/${key.id}/verifications`, w.session);
    expect(res.body.buckets).toEqual([
      { start: '2031-05-01T00:00:00.000Z', outcomes: outcomes({ valid: 2, usage_exceeded: 2 }) },
    ]);
  });
});
