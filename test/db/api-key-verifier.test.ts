import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyVerificationStore } from '../../src/api-keys/api-key-verification.store.js';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { ApiKeyVerifier } from '../../src/auth/api-key-verifier.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('API key verification on PostgreSQL', () => {
  const clock = new TestClock('2030-03-01T10:00:00Z');
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  async function mint(session: string, orgId: string, body: Record<string, unknown> = {}) {
    const res = await t.api.post('/api-keys', session, { org_id: orgId, name: 'verifier', ...body });
    expect(res.status).toBe(201);
    return { key: res.body.key as string, id: res.body.id as string };
  }

  it('answers a burst of concurrent mixed verifications each correctly, with one statement per batch', async () => {
    const owner = await t.seed.world('owner');
    const valid = await mint(owner.session, owner.orgId, { scopes: ['decisions:read', 'decisions:write'] });
    const revoked = await mint(owner.session, owner.orgId);
    const expiring = await mint(owner.session, owner.orgId, { expires_in_days: 1 });
    expect((await t.api.delete(`/api-keys/${revoked.id}`, owner.session)).status).toBe(204);

    const viewer = await t.seed.world('viewer');
    const viewerKey = await mint(viewer.session, viewer.orgId);
    const leaver = await t.seed.world('member');
    const leaverKey = await mint(leaver.session, leaver.orgId);
    await t.seed.removeMember(leaver.orgId, leaver.userId);
    clock.advance(2 * 24 * 3600 * 1000);

    const unknown = generateApiKey().key;
    const expected = new Map<string, { id: string; userId: string; scopes: string[] } | null>([
      [valid.key, { id: valid.id, userId: owner.userId, scopes: ['decisions:read', 'decisions:write'] }],
      [viewerKey.key, { id: viewerKey.id, userId: viewer.userId, scopes: ['decisions:read'] }],
      [revoked.key, null],
      [expiring.key, null],
      [leaverKey.key, null],
      [unknown, null],
    ]);
    const tokens = Array.from({ length: 60 }, (_, i) => [...expected.keys()][(i * 7) % expected.size]);
    const verifier = t.app.get(ApiKeyVerifier, { strict: false });
    const statement = vi.spyOn(t.app.get(ApiKeyVerificationStore, { strict: false }), 'findForVerification');

    const results = await Promise.all(tokens.map((token) => verifier.verify(token)));

    tokens.forEach((token, i) => {
      const want = expected.get(token);
      if (!want) expect(results[i], `answer ${i}`).toBeNull();
      else
        expect(results[i], `answer ${i}`).toMatchObject({
          kind: 'api_key',
          keyId: want.id,
          userId: want.userId,
          scopes: want.scopes,
        });
    });
    expect(statement).toHaveBeenCalledTimes(1);
    expect(statement.mock.calls[0][0]).toHaveLength(expected.size);
    statement.mockRestore();
  });
});
