import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditService } from '../../src/audit/audit.service.js';
import { AUDIT_ACTIONS } from '../../src/audit/audit-actions.js';
import { TestClock } from '../support/clock.js';
import { ApiClient } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expect400, mintOk, NOWHERE, UUID_SHAPE } from './api-keys.fixtures.js';

const DAY_MS = 86_400_000;

describe('audit log: recording, GET /orgs/{org_id}/audit-events, append-only, retention', () => {
  let t: TestApp;
  const clock = new TestClock('2031-03-01T10:00:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  const events = (session: string, orgId: string, query = '') =>
    t.api.get(`/orgs/${orgId}/audit-events${query}`, session);

  describe('recording', () => {
    it("records a mint with actor, credential, target, client address, user agent and the service's request id (the caller's beside it), and no secret", async () => {
      const w = await t.seed.world('owner');
      const res = await t.api.request('POST', '/api-keys', {
        token: w.session,
        body: { org_id: w.orgId, name: 'ci', scopes: ['decisions:read'] },
        headers: { 'user-agent': 'audit-test/1.0', 'x-request-id': 'req-audit-mint-1' },
      });
      expect(res.status).toBe(201);
      const ours = res.headers.get('x-request-id');
      expect(ours).toMatch(UUID_SHAPE);
      const page = await events(w.session, w.orgId);
      expect(page.status).toBe(200);
      expect(page.body.events).toEqual([
        {
          id: expect.stringMatching(UUID_SHAPE),
          created_at: '2031-03-01T10:00:00.000Z',
          org_id: w.orgId,
          action: 'api_key.minted',
          actor: { type: 'user', id: w.userId },
          credential: { type: 'session' },
          target: { type: 'api_key', id: res.body.id },
          client_address: '127.0.0.1',
          user_agent: 'audit-test/1.0',
          request_id: ours,
          details: {
            name: 'ci',
            lookup: res.body.lookup,
            scopes: ['decisions:read'],
            expires_at: null,
            client_request_id: 'req-audit-mint-1',
          },
        },
      ]);
      expect(page.text).not.toContain(res.body.key);
      const secret = res.body.key.slice(res.body.key.indexOf(res.body.lookup) + res.body.lookup.length);
      const stored = JSON.stringify(await t.seed.auditEvents(w.orgId));
      expect(stored).not.toContain(secret);
    });

    it('records a revoke once: revoking again changes nothing and records nothing', async () => {
      const w = await t.seed.world('admin');
      const key = await mintOk(t, w.session, { org_id: w.orgId, name: 'laptop' });
      clock.advance(1000);
      expect((await t.api.delete(`/api-keys/${key.id}`, w.session)).status).toBe(204);
      expect((await t.api.delete(`/api-keys/${key.id}`, w.session)).status).toBe(204);
      const rows = await t.seed.auditEvents(w.orgId);
      expect(rows.map((r) => r.action)).toEqual(['api_key.minted', 'api_key.revoked']);
      expect(rows[1]).toMatchObject({
        actor_type: 'user',
        actor_id: w.userId,
        target_type: 'api_key',
        target_id: key.id,
        details: { name: 'laptop' },
      });
    });

    it('records a revoke (one statement) with the origin, and the name scrubbed as the mint scrubbed it; an admin revoke adds owner_id', async () => {
      const w = await t.seed.world('owner');
      // Only the revoke's statement reads the name: its scrub (SQL) must match the mint's (JavaScript).
      const name = 'pasted svc_live_AbC_123 and eyJhbGci.eyJzdWIi.sig-_x here';
      const own = await mintOk(t, w.session, { org_id: w.orgId, name });
      const other = await mintOk(t, w.session, { org_id: w.orgId, name: 'by admin' });
      const headers = { 'user-agent': 'audit-test/2.0', 'x-request-id': 'req-audit-revoke-1' };
      const ownRevoke = await t.api.request('DELETE', `/api-keys/${own.id}`, { token: w.session, headers });
      const adminRevoke = await t.api.request('DELETE', `/orgs/${w.orgId}/api-keys/${other.id}`, {
        token: w.session,
        headers,
      });
      expect([ownRevoke.status, adminRevoke.status]).toEqual([204, 204]);
      const page = await events(w.session, w.orgId, '?limit=10');
      const minted = page.body.events.find(
        (e: { action: string; target: { id: string } }) => e.action === 'api_key.minted' && e.target.id === own.id,
      );
      expect(minted.details.name).toBe('pasted [REDACTED] and [REDACTED] here');
      const common = {
        id: expect.stringMatching(UUID_SHAPE),
        created_at: minted.created_at,
        org_id: w.orgId,
        actor: { type: 'user', id: w.userId },
        credential: { type: 'session' },
        client_address: '127.0.0.1',
        user_agent: 'audit-test/2.0',
      };
      const client_request_id = 'req-audit-revoke-1';
      const revokes = page.body.events.filter((e: { action: string }) => e.action !== 'api_key.minted');
      expect(revokes).toHaveLength(2);
      expect(revokes).toContainEqual({
        ...common,
        request_id: ownRevoke.headers.get('x-request-id'),
        action: 'api_key.revoked',
        target: { type: 'api_key', id: own.id },
        details: { name: minted.details.name, client_request_id },
      });
      expect(revokes).toContainEqual({
        ...common,
        request_id: adminRevoke.headers.get('x-request-id'),
        action: 'api_key.revoked_by_admin',
        target: { type: 'api_key', id: other.id },
        details: { name: 'by admin', owner_id: w.userId, client_request_id },
      });
    });

    it('records nothing for a refused change', async () => {
      const w = await t.seed.world('viewer');
      expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:write'] })).status).toBe(
        403,
      );
      expect((await t.api.delete(`/api-keys/${NOWHERE}`, w.session)).status).toBe(404);
      expect(await t.seed.auditEvents(w.orgId)).toEqual([]);
    });

    it('records in the same transaction as the change: when the event cannot be written, the change is undone', async () => {
      const w = await t.seed.world('owner');
      const key = await mintOk(t, w.session, { org_id: w.orgId });
      // A constraint that refuses this org's revoke events stands in for the database failing the write.
      await t.db.pool.query(
        `ALTER TABLE audit_events ADD CONSTRAINT test_refuse CHECK (NOT (org_id = '${w.orgId}' AND action = 'api_key.revoked')) NOT VALID`,
      );
      try {
        // An unexpected database failure is the one answer the document does not list: no validation here.
        const unchecked = new ApiClient(t.url, { validate: false });
        expect((await unchecked.delete(`/api-keys/${key.id}`, w.session)).status).toBe(500);
      } finally {
        await t.db.pool.query(`ALTER TABLE audit_events DROP CONSTRAINT test_refuse`);
      }
      expect((await t.api.get('/me', key.key)).status).toBe(200);
      const { rows } = await t.db.pool.query(`SELECT revoked_at FROM api_keys WHERE id = $1`, [key.id]);
      expect(rows[0].revoked_at).toBeNull();
    });
  });

  describe('GET /orgs/{org_id}/audit-events', () => {
    it('lets owners and admins read, newest first, with keyset pagination', async () => {
      const w = await t.seed.world('owner');
      const admin = await t.seed.colleague(w.orgId, 'admin');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push((await mintOk(t, w.session, { org_id: w.orgId, name: `k${i}` })).id);
        clock.advance(1000);
      }
      const first = await events(admin.session, w.orgId, '?limit=2');
      expect(first.status).toBe(200);
      expect(first.body.events.map((e: any) => e.target.id)).toEqual([ids[4], ids[3]]);
      expect(typeof first.body.next_cursor).toBe('string');
      const second = await events(admin.session, w.orgId, `?limit=2&cursor=${first.body.next_cursor}`);
      expect(second.body.events.map((e: any) => e.target.id)).toEqual([ids[2], ids[1]]);
      const last = await events(admin.session, w.orgId, `?limit=2&cursor=${second.body.next_cursor}`);
      expect(last.body.events.map((e: any) => e.target.id)).toEqual([ids[0]]);
      expect(last.body).not.toHaveProperty('next_cursor');
    });

    it('filters by action, actor_id, target_id, since and until (all must hold)', async () => {
      const w = await t.seed.world('owner');
      const member = await t.seed.colleague(w.orgId, 'member');
      const start = clock.now().toISOString();
      const a = await mintOk(t, w.session, { org_id: w.orgId, name: 'a' });
      clock.advance(1000);
      const middle = clock.now().toISOString();
      const b = await mintOk(t, member.session, { org_id: w.orgId, name: 'b' });
      clock.advance(1000);
      expect((await t.api.delete(`/api-keys/${a.id}`, w.session)).status).toBe(204);
      clock.advance(1000);
      const end = clock.now().toISOString();

      const actions = async (query: string) =>
        (await events(w.session, w.orgId, query)).body.events.map((e: any) => `${e.action}:${e.target.id}`);
      expect(await actions('?action=api_key.revoked')).toEqual([`api_key.revoked:${a.id}`]);
      expect(await actions(`?actor_id=${member.userId}`)).toEqual([`api_key.minted:${b.id}`]);
      expect(await actions(`?target_id=${a.id.toUpperCase()}`)).toEqual([
        `api_key.revoked:${a.id}`,
        `api_key.minted:${a.id}`,
      ]);
      expect(await actions(`?since=${middle}`)).toEqual([`api_key.revoked:${a.id}`, `api_key.minted:${b.id}`]);
      expect(await actions(`?until=${middle}`)).toEqual([`api_key.minted:${a.id}`]);
      expect(await actions(`?since=${start}&until=${end}&action=api_key.minted&actor_id=${w.userId}`)).toEqual([
        `api_key.minted:${a.id}`,
      ]);
    });

    it.each([
      ['?action=key.stolen', /action must be one of/],
      ['?action=', /action/],
      ['?actor_id=nope', /actor_id must be a UUID/],
      ['?target_id=1', /target_id must be a UUID/],
      ['?since=yesterday', /since must be an RFC 3339/],
      ['?until=2031-01-01', /until must be an RFC 3339/],
      ['?limit=0', /limit must be between 1 and 100/],
      ['?limit=101', /limit must be between 1 and 100/],
      ['?cursor=bogus', /cursor is not a cursor/],
    ])('refuses %s with a 400 naming it', async (query, message) => {
      const w = await t.seed.world('owner');
      expect400(await events(w.session, w.orgId, query), message);
    });

    it('refuses an org_id that is not a UUID (400)', async () => {
      const w = await t.seed.world('owner');
      expect400(await events(w.session, 'not-a-uuid'), /org_id must be a UUID/);
    });

    it('refuses members and viewers (403)', async () => {
      const w = await t.seed.world('owner');
      for (const role of ['member', 'viewer'] as const) {
        const c = await t.seed.colleague(w.orgId, role);
        const res = await events(c.session, w.orgId);
        expect(res.status).toBe(403);
        expect(res.body.message).toMatch(/owners and admins/);
      }
    });

    it("answers 404 alike for a missing org and another org's log; an admin of A reads nothing of B", async () => {
      const a = await t.seed.world('owner');
      const b = await t.seed.world('owner');
      await mintOk(t, b.session, { org_id: b.orgId });
      const missing = await events(a.session, NOWHERE);
      const foreign = await events(a.session, b.orgId);
      expect(missing.status).toBe(404);
      expect(foreign.status).toBe(404);
      expect(foreign.text).toBe(missing.text);
    });

    it('refuses an API key (403) and no credential (401)', async () => {
      const w = await t.seed.world('owner');
      const key = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await events(key.key, w.orgId)).status).toBe(403);
      expect((await t.api.get(`/orgs/${w.orgId}/audit-events`)).status).toBe(401);
    });

    it('documents every action it accepts', async () => {
      const doc = (await t.api.get('/openapi.json')).body;
      const params = doc.paths['/orgs/{org_id}/audit-events'].get.parameters;
      expect(params.find((p: any) => p.name === 'action').schema.enum).toEqual([...AUDIT_ACTIONS]);
    });
  });

  describe('append-only', () => {
    it('the database refuses UPDATE, DELETE and TRUNCATE of audit events', async () => {
      const w = await t.seed.world('owner');
      await mintOk(t, w.session, { org_id: w.orgId });
      const [row] = await t.seed.auditEvents(w.orgId);
      await expect(
        t.db.pool.query(`UPDATE audit_events SET action = 'api_key.revoked' WHERE id = $1`, [row.id]),
      ).rejects.toThrow(/append-only/);
      await expect(t.db.pool.query(`DELETE FROM audit_events WHERE id = $1`, [row.id])).rejects.toThrow(/append-only/);
      await expect(t.db.pool.query(`TRUNCATE audit_events`)).rejects.toThrow(/append-only/);
      expect((await t.seed.auditEvents(w.orgId)).map((r) => r.id)).toEqual([row.id]);
    });

    it('the retention job prunes events past AUDIT_RETENTION_DAYS in bounded batches, and nothing newer', async () => {
      // Ages are judged by the database's clock (the retention function never deletes an event
      // younger than 30 days by it), so the events are written in the database's past.
      const w = await t.seed.world('owner');
      const now = Date.now();
      const resume = clock.now();
      try {
        const old: string[] = [];
        clock.set(new Date(now - 401 * DAY_MS));
        for (let i = 0; i < 3; i++) old.push((await mintOk(t, w.session, { org_id: w.orgId })).id);
        clock.set(new Date(now - 101 * DAY_MS));
        const older = await mintOk(t, w.session, { org_id: w.orgId });
        clock.set(new Date(now - 10 * DAY_MS));
        const recent = await mintOk(t, w.session, { org_id: w.orgId });
        clock.set(new Date(now));
        const audit = t.app.get(AuditService);
        expect(await audit.prune(2, 1)).toBe(2); // one bounded batch
        expect(await audit.prune(2, 100)).toBeGreaterThanOrEqual(1);
        const rows = await t.seed.auditEvents(w.orgId);
        expect(rows.map((r) => r.target_id)).toEqual([older.id, recent.id]);
        // No setting opens the table to a plain DELETE (the 10-day-old event refuses it).
        await expect(
          t.db.pool.query(
            `SELECT set_config('audit.retention', 'on', false); DELETE FROM audit_events WHERE org_id = '${w.orgId}'`,
          ),
        ).rejects.toThrow(/append-only/);
        expect(await t.seed.auditEvents(w.orgId)).toHaveLength(2);
      } finally {
        clock.set(resume);
      }
    });
  });
});
