import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertKeyRows } from '../support/factories.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: unbounded lists: key listings are paged, stable under churn, and refuse bad paging parameters.
 */

/**
 * Seeds `count` key rows (many sharing a created_at, to exercise the id tie-break; at millisecond
 * precision, as the service's clock writes them) for a user in one statement (what 1,000 mints would leave behind, without the mints). */
async function seedKeys(t: TestApp, userId: string, orgId: string, count: number): Promise<void> {
  const now = Date.now();
  await insertKeyRows(
    t.db.pool,
    Array.from({ length: count }, (_, i) => ({
      userId,
      orgId,
      name: `seeded ${i + 1}`,
      createdAt: new Date(now - ((i + 1) % 250) * 1000),
    })),
  );
}

describe('bounded work per caller: listing', () => {
  let t: TestApp;
  let replica: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { MAX_ACTIVE_KEYS_PER_USER_ORG: '5' } });
    replica = await startTestApp({ db: t.db, env: { MAX_ACTIVE_KEYS_PER_USER_ORG: '5' } });
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
  });

  it('pages through 1,000 keys with no duplicates and none missing while keys are minted and revoked concurrently', async () => {
    const w = await t.seed.world('owner');
    await seedKeys(t, w.userId, w.orgId, 1000);
    const { rows } = await t.db.pool.query<{ id: string }>(`SELECT id FROM api_keys WHERE user_id = $1`, [w.userId]);
    const seeded = new Set(rows.map((r) => r.id));
    // Mints go to a second org (the first is far over the cap of 5); revokes hit seeded keys.
    const other = await t.seed.org();
    await t.seed.member(other, w.userId, 'owner');
    await t.seed.workspace(other, w.userId);

    let walking = true;
    const minted: string[] = [];
    const churn = (async () => {
      const victims = [...seeded].slice(0, 200);
      for (let i = 0; walking && i < victims.length; i++) {
        await replica.api.delete(`/api-keys/${victims[i]}`, w.session);
        if (minted.length < 4) {
          const m = await replica.api.post('/api-keys', w.session, { org_id: other });
          if (m.status === 201) minted.push(m.body.id);
        }
      }
    })();

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await t.api.get(`/api-keys?limit=37${cursor ? `&cursor=${cursor}` : ''}`, w.session);
      expect(res.status).toBe(200);
      expect(res.body.keys.length).toBeLessThanOrEqual(37);
      seen.push(...res.body.keys.map((k: { id: string }) => k.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor && pages < 100);
    walking = false;
    await churn;

    expect(new Set(seen).size, 'duplicates across pages').toBe(seen.length);
    expect(
      [...seeded].filter((id) => !seen.includes(id)),
      'seeded keys missing from the walk',
    ).toEqual([]);
    expect(seen.filter((id) => !seeded.has(id) && !minted.includes(id))).toEqual([]);
  });

  it('returns at most 100 keys with next_cursor when more exist, and no next_cursor on the last page', async () => {
    const w = await t.seed.world('viewer');
    await seedKeys(t, w.userId, w.orgId, 150);
    const first = await t.api.get('/api-keys', w.session);
    expect(first.body.keys).toHaveLength(100);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await t.api.get(`/api-keys?cursor=${first.body.next_cursor}`, w.session);
    expect(second.body.keys).toHaveLength(50);
    expect(second.body).not.toHaveProperty('next_cursor');
    const few = await t.seed.world('viewer');
    await seedKeys(t, few.userId, few.orgId, 3);
    const all = await t.api.get('/api-keys', few.session);
    expect(Object.keys(all.body)).toEqual(['keys']);
  });

  it('documents the paging parameters, next_cursor and the new 409 and 429 in the OpenAPI document', async () => {
    const doc = (await t.api.get('/openapi.json')).body;
    const list = doc.paths['/api-keys'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['cursor', 'limit', 'org_id', 'state']);
    expect(doc.components.schemas.ApiKeyList.properties).toHaveProperty('next_cursor');
    const mint = doc.paths['/api-keys'].post.responses;
    expect(mint['409'].description).toMatch(/MAX_ACTIVE_KEYS_PER_USER_ORG/);
    expect(mint['429'].description).toMatch(/MINT_RATE_LIMIT/);
    expect(mint['429'].headers).toHaveProperty('Retry-After');
  });

  it('filters by state and refuses bad paging parameters with a 400 naming them', async () => {
    const w = await t.seed.world('owner');
    const keys = [];
    for (let i = 0; i < 3; i++)
      keys.push((await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: `s${i}` })).body);
    await t.api.delete(`/api-keys/${keys[0].id}`, w.session);
    await t.db.pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [keys[1].id]);
    const names = async (state: string) =>
      (await t.api.get(`/api-keys?state=${state}`, w.session)).body.keys.map((k: { name: string }) => k.name);
    expect(await names('active')).toEqual(['s2']);
    expect(await names('revoked')).toEqual(['s0']);
    expect(await names('expired')).toEqual(['s1']);
    for (const [query, word] of [
      ['state=gone', 'state'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      ['org_id=nope', 'org_id'],
    ]) {
      const res = await t.api.get(`/api-keys?${query}`, w.session);
      expect(res.status, query).toBe(400);
      expect(res.body.message, query).toContain(word);
    }
  });
});
