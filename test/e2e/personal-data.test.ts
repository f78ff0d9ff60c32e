import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AuditService } from '../../src/audit/audit.service.js';
import { PersonalDataRepository } from '../../src/personal-data/personal-data.repository.js';
import { API_OPERATOR, PersonalDataService } from '../../src/personal-data/personal-data.service.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { NOWHERE, testPrincipal } from '../support/factories.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const TOKEN = 'operator-token-0123456789abcdef-0123456789abcdef';

/**
 * Every place a value could sit in the database: each text, citext, json, jsonb or array column of
 * every table in every schema (the job queue's too), searched case-insensitively. A pure SQL search
 * over information_schema, so it needs no pg_dump.
 */
async function whereInDatabase(t: TestApp, needle: string): Promise<string[]> {
  const { rows: columns } = await t.db.pool.query<{ s: string; t: string; c: string }>(
    `SELECT c.table_schema AS s, c.table_name AS t, c.column_name AS c
       FROM information_schema.columns c JOIN information_schema.tables x USING (table_schema, table_name)
      WHERE x.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
        AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'bytea') OR c.udt_name = 'citext')`,
  );
  expect(columns.length).toBeGreaterThan(20);
  const found: string[] = [];
  for (const { s, t: table, c } of columns) {
    const { rows } = await t.db.pool.query(
      `SELECT 1 FROM "${s}"."${table}" WHERE strpos(lower(encode(convert_to("${c}"::text, 'UTF8'), 'escape')), lower($1)) > 0 LIMIT 1`,
      [needle],
    );
    if (rows.length > 0) found.push(`${s}.${table}.${c}`);
  }
  return found.sort();
}

describe("a person's data on request through the operator's API", () => {
  let t: TestApp;
  /** `token` null: no Authorization header at all. */
  const admin = (method: string, path: string, token: string | null = TOKEN) =>
    t.api.request(method, path, token === null ? {} : { token });

  beforeAll(async () => {
    t = await startTestApp({
      env: { ADMIN_API_TOKEN: TOKEN, USAGE_METERS: '{"exports":{"description":"Report exports"}}' },
    });
  });
  afterAll(async () => t?.close());

  /** A person in two orgs with two keys (one charged), their events as actor, and a colleague. */
  async function person() {
    const email = `Grace.Hopper-${randomUUID().slice(0, 8)}@Example.com`;
    const w = await t.seed.world('owner');
    const user = (await t.db.pool.query(`UPDATE users SET email = $2 WHERE id = $1 RETURNING id`, [w.userId, email]))
      .rows[0];
    const session = t.seed.session(user.id, email);
    const second = await t.seed.org('pro', 'Second');
    await t.seed.member(second, user.id, 'viewer');
    const keys = [];
    for (const name of ['laptop', 'ci']) {
      // An admin's note on the key may name the person: key metadata is theirs to erase too.
      const metadata = name === 'ci' ? { contact: email, team: 'compilers' } : undefined;
      const minted = await t.api.post('/api-keys', session, {
        org_id: w.orgId,
        name,
        scopes: ['decisions:read'],
        metadata,
      });
      expect(minted.status).toBe(201);
      keys.push(minted.body);
    }
    await t.app
      .get(UsageService)
      .charge(w.orgId, 'asks', 3, testPrincipal({ userId: user.id, orgId: w.orgId, keyId: keys[0].id }));
    await t.app
      .get(UsageService)
      .charge(w.orgId, 'imports', 1, testPrincipal({ kind: 'session', userId: user.id, orgId: w.orgId }));
    await t.app
      .get(UsageService)
      .charge(w.orgId, 'exports', 2, testPrincipal({ userId: user.id, orgId: w.orgId, keyId: keys[1].id }));
    await t.app.get(UsageService).settle();
    // The e-mail typed into a detail an org admin wrote (any case), as the log may hold it.
    const colleague = await t.seed.colleague(w.orgId, 'admin');
    await t.db.pool.query(
      `INSERT INTO audit_events (created_at, org_id, action, actor_type, actor_id, target_type, target_id, details)
       VALUES (now(), $1, 'webhook.updated', 'user', $2, 'webhook', gen_random_uuid(), $3)`,
      [
        w.orgId,
        colleague.userId,
        JSON.stringify({ description: `alerts to ${email.toLowerCase()}`, owner_id: user.id }),
      ],
    );
    return { ...w, userId: user.id as string, email, session, second, keys, colleague };
  }

  it('answers only to ADMIN_API_TOKEN: a missing or wrong token, a session or an API key is a 401', async () => {
    const p = await person();
    for (const token of [null, 'x'.repeat(TOKEN.length), p.session, p.keys[0].key]) {
      const res = await admin('GET', `/admin/users/${p.userId}/export`, token);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="admin"');
      expect((await admin('POST', `/admin/users/${p.userId}/erase`, token)).status).toBe(401);
    }
    expect((await admin('GET', '/admin/users/not-a-uuid/export')).body.message).toBe('user_id must be a UUID');
    const unknown = await admin('POST', `/admin/users/${NOWHERE}/erase`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe(`no user with id ${NOWHERE}`);
    expect((await admin('GET', `/admin/users/${NOWHERE}/export`)).status).toBe(404);
    expect(await t.seed.auditEvents(p.orgId)).not.toContainEqual(expect.objectContaining({ action: 'user.erased' }));
  });

  it('exports the user, memberships, workspaces, masked keys, events as actor and usage as one JSON document', async () => {
    const p = await person();
    const res = await admin('GET', `/admin/users/${p.userId}/export`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = res.body;
    expect(Object.keys(doc)).toEqual([
      'exported_at',
      'user',
      'memberships',
      'workspaces',
      'api_keys',
      'audit_events',
      'usage_attribution',
      'usage_meters',
    ]);
    expect(doc.user).toEqual({ id: p.userId, email: p.email, created_at: expect.any(String) });
    expect(doc.memberships.map((m: any) => [m.org_id, m.role]).sort()).toEqual(
      [
        [p.orgId, 'owner'],
        [p.second, 'viewer'],
      ].sort(),
    );
    expect(doc.memberships.find((m: any) => m.org_id === p.second).org_name).toBe('Second');
    expect(doc.workspaces).toEqual([{ id: expect.any(String), org_id: p.orgId, created_at: expect.any(String) }]);
    expect(doc.api_keys.map((k: any) => k.name)).toEqual(['ci', 'laptop']);
    expect(doc.api_keys[1]).toEqual({
      id: p.keys[0].id,
      org_id: p.orgId,
      name: 'laptop',
      lookup: p.keys[0].lookup,
      last4: p.keys[0].last4,
      scopes: ['decisions:read'],
      created_at: p.keys[0].created_at,
      state: 'active',
    });
    expect(res.text).not.toContain(p.keys[0].key);
    expect(res.text).not.toMatch(/key_hash|keyHash|svc_live_/);
    expect(doc.audit_events.map((e: any) => [e.action, e.actor])).toEqual([
      ['api_key.minted', { type: 'user', id: p.userId }],
      ['api_key.minted', { type: 'user', id: p.userId }],
    ]);
    expect(doc.usage_attribution).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          org_id: p.orgId,
          credential_kind: 'api_key',
          credential_id: p.keys[0].id,
          asks: 3,
          imports: 0,
        }),
        expect.objectContaining({
          org_id: p.orgId,
          credential_kind: 'session',
          credential_id: p.userId,
          asks: 0,
          imports: 1,
        }),
      ]),
    );
    expect(doc.usage_attribution).toHaveLength(2);
    expect(doc.usage_meters).toEqual([
      {
        org_id: p.orgId,
        day: expect.any(String),
        credential_kind: 'api_key',
        credential_id: p.keys[1].id,
        meter: 'exports',
        used: 2,
      },
    ]);
  });

  it('erases: keys revoked, memberships gone, e-mail nowhere in the database, the log pseudonymised and still append-only; again: nothing to do', async () => {
    const p = await person();
    const res = await admin('POST', `/admin/users/${p.userId}/erase`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      user_id: p.userId,
      email: `erased-${p.userId}@erased.invalid`,
      keys_revoked: 2,
      audit_events_pseudonymised: 5,
    });
    expect(res.body.orgs_left.sort()).toEqual([p.orgId, p.second].sort());

    expect(await whereInDatabase(t, p.email)).toEqual([]);
    expect(await whereInDatabase(t, p.email.split('@')[0])).toEqual([]);
    expect((await t.api.get('/me', p.keys[0].key)).status).toBe(401);
    expect(
      (await t.db.pool.query(`SELECT count(*)::int AS n FROM memberships WHERE user_id = $1`, [p.userId])).rows[0].n,
    ).toBe(0);
    expect(
      (await t.db.pool.query(`SELECT count(*)::int AS n FROM workspaces WHERE user_id = $1`, [p.userId])).rows[0].n,
    ).toBe(0);
    expect(
      (
        await t.db.pool.query(
          `SELECT count(*)::int AS n FROM audit_events WHERE actor_id = $1 OR target_id = $1 OR details::text LIKE '%' || $1 || '%'`,
          [p.userId],
        )
      ).rows[0].n,
    ).toBe(0);

    // One stable pseudonym stands for the person wherever they were named, so their events still group.
    const events = await t.seed.auditEvents(p.orgId);
    const minted = events.filter(
      (e) => e.action === 'api_key.minted' && e.actor_type === 'user' && e.actor_id !== p.colleague.userId,
    );
    expect(minted).toHaveLength(2);
    const pseudonym = minted[0].actor_id;
    expect(pseudonym).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(minted[1].actor_id).toBe(pseudonym);
    // Their own requests' address and browser are gone with their name.
    expect(minted.map((e) => [e.client_address ?? null, e.user_agent ?? null])).toEqual([
      [null, null],
      [null, null],
    ]);
    // Every key of theirs lost its metadata (null: as if never set), not only the text that was the e-mail.
    expect(
      (await t.db.pool.query(`SELECT metadata FROM api_keys WHERE user_id = $1 ORDER BY name`, [p.userId])).rows,
    ).toEqual([{ metadata: null }, { metadata: null }]);
    expect(
      events
        .filter((e) => e.action === 'api_key.revoked')
        .map((e) => [e.actor_type, e.actor_source, e.details.source, e.client_address]),
    ).toEqual([
      ['operator', 'admin_api', 'user_erasure', '127.0.0.1'],
      ['operator', 'admin_api', 'user_erasure', '127.0.0.1'],
    ]);
    const erased = [...events, ...(await t.seed.auditEvents(p.second))].filter((e) => e.action === 'user.erased');
    expect(erased.map((e) => [e.org_id, e.target_id, e.details.role]).sort()).toEqual(
      [
        [p.orgId, pseudonym, 'owner'],
        [p.second, pseudonym, 'viewer'],
      ].sort(),
    );
    const written = events.find((e) => e.action === 'webhook.updated')!;
    expect(written).toMatchObject({
      actor_id: p.colleague.userId,
      details: { description: 'alerts to [erased]', owner_id: pseudonym },
    });
    // The colleague's own trail is theirs still.
    expect(
      events.filter((e) => e.target_id === p.colleague.userId || e.actor_id === p.colleague.userId).length,
    ).toBeGreaterThan(0);
    await expect(
      t.db.pool.query(`UPDATE audit_events SET actor_id = $2 WHERE id = $1`, [minted[0].id, p.userId]),
    ).rejects.toThrow(/append-only/);

    const again = await admin('POST', `/admin/users/${p.userId}/erase`);
    expect(again.body).toEqual({
      user_id: p.userId,
      email: `erased-${p.userId}@erased.invalid`,
      keys_revoked: 0,
      orgs_left: [],
      audit_events_pseudonymised: 0,
    });
    const exported = (await admin('GET', `/admin/users/${p.userId}/export`)).body;
    expect(exported).toMatchObject({
      user: { id: p.userId, email: `erased-${p.userId}@erased.invalid` },
      memberships: [],
      workspaces: [],
      audit_events: [],
    });
    expect(exported.api_keys.map((k: any) => k.state)).toEqual(['revoked', 'revoked']);
  });

  it('completes an erasure that crashed between two orgs, and one that crashed before the audit log, with one user.erased per org', async () => {
    const service = t.app.get(PersonalDataService);
    const p = await person();
    const repo = t.app.get(PersonalDataRepository);
    const leave = repo.leaveOrg.bind(repo);
    const crashOnSecond = vi
      .spyOn(repo, 'leaveOrg')
      .mockImplementationOnce(leave)
      .mockRejectedValueOnce(new Error('killed'));
    await expect(service.erase(p.userId, API_OPERATOR)).rejects.toThrow('killed');
    crashOnSecond.mockRestore();
    expect(
      (await t.db.pool.query(`SELECT count(*)::int AS n FROM memberships WHERE user_id = $1`, [p.userId])).rows[0].n,
    ).toBe(1);
    expect((await t.db.pool.query(`SELECT email::text FROM users WHERE id = $1`, [p.userId])).rows[0].email).toBe(
      p.email,
    );

    const crashBeforeLog = vi.spyOn(AuditService.prototype, 'pseudonymise').mockRejectedValueOnce(new Error('killed'));
    await expect(service.erase(p.userId, API_OPERATOR)).rejects.toThrow('killed');
    crashBeforeLog.mockRestore();
    // Keys and memberships are gone; the e-mail is still where the last two steps remove it.
    expect(await whereInDatabase(t, p.email)).toEqual(['public.audit_events.details', 'public.users.email']);

    const done = await service.erase(p.userId, API_OPERATOR);
    expect(done).toMatchObject({ keys_revoked: 0, orgs_left: [] });
    expect(done.audit_events_pseudonymised).toBeGreaterThan(0);
    expect(await whereInDatabase(t, p.email)).toEqual([]);
    const erased = [...(await t.seed.auditEvents(p.orgId)), ...(await t.seed.auditEvents(p.second))].filter(
      (e) => e.action === 'user.erased',
    );
    expect(erased).toHaveLength(2);
    expect(new Set(erased.map((e) => e.org_id))).toEqual(new Set([p.orgId, p.second]));
    expect(
      (
        await t.db.pool.query(`SELECT count(*)::int AS n FROM audit_events WHERE actor_id = $1 OR target_id = $1`, [
          p.userId,
        ])
      ).rows[0].n,
    ).toBe(0);
  });
});
