import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: floods of mints: the active-key cap and the mint rate hold across instances and answer a clear 4xx.
 */

describe('bounded work per caller: minting', () => {
  let t: TestApp;
  let replica: TestApp;

  beforeAll(async () => {
    const env = { MAX_ACTIVE_KEYS_PER_USER_ORG: '5' };
    t = await startTestApp({ env });
    replica = await startTestApp({ db: t.db, env });
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
  });

  it('lets a flood of concurrent mints on two instances create exactly the cap of active keys, the rest 409 saying to revoke one', async () => {
    const w = await t.seed.world('viewer');
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? replica : t).api.post('/api-keys', w.session, { org_id: w.orgId, name: `flood ${i}` }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(5);
    const refused = answers.filter((a) => a.status !== 201);
    expect(refused.every((a) => a.status === 409)).toBe(true);
    expect(refused[0].body.message).toMatch(/revoke one/);
    expect(refused[0].body.message).toMatch(/MAX_ACTIVE_KEYS_PER_USER_ORG/);
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1`, [w.userId]);
    expect(rows[0].n).toBe(5);
  });

  it('frees a place when a key is revoked or expires, and counts per org', async () => {
    const w = await t.seed.world('member');
    const minted = [];
    for (let i = 0; i < 5; i++) minted.push((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body);
    expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).status).toBe(409);
    await t.api.delete(`/api-keys/${minted[0].id}`, w.session);
    expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).status).toBe(201);
    await t.db.pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [minted[1].id]);
    expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).status).toBe(201);
    const other = await t.seed.org();
    await t.seed.member(other, w.userId, 'member');
    await t.seed.workspace(other, w.userId);
    expect((await t.api.post('/api-keys', w.session, { org_id: other })).status).toBe(201);
  });

  it('answers 429 with Retry-After once a user mints faster than MINT_RATE_LIMIT, and other users are unaffected', async () => {
    const limited = await startTestApp({ db: t.db, env: { MINT_RATE_LIMIT: '3' } });
    try {
      const w = await limited.seed.world('owner');
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push(await limited.api.post('/api-keys', w.session, { org_id: w.orgId }));
      expect(statuses.map((s) => s.status)).toEqual([201, 201, 201, 429]);
      expect(Number(statuses[3].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(statuses[3].body.message).toMatch(/MINT_RATE_LIMIT/);
      const other = await limited.seed.world('owner');
      expect((await limited.api.post('/api-keys', other.session, { org_id: other.orgId })).status).toBe(201);
    } finally {
      await limited.close();
    }
  });
});
