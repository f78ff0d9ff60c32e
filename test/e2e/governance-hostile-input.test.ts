import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { listKeys, mintOk } from './api-keys.fixtures.js';

const RUNS = 40;

/** Hostile input on the governance routes: any body or query is a 2xx or a 4xx, never a 5xx or a partial write. */
describe('hostile input on rotation, org-admin and audit routes', () => {
  let t: TestApp;
  let owner: { orgId: string; session: string };
  let keyId: string;
  let lookup: string;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.seed.world('owner');
    const key = await mintOk(t, owner.session, { org_id: owner.orgId });
    keyId = key.id;
    lookup = key.lookup;
  });
  afterAll(async () => t?.close());

  it('answers any rotate body with 201 or a 400, and changes the key only on 201', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.jsonValue(), fc.record({ grace_period_seconds: fc.jsonValue() }, { requiredKeys: [] })),
        async (body) => {
          const res = await t.api.post(`/api-keys/${keyId}/rotate`, owner.session, body);
          expect([201, 400], res.text).toContain(res.status);
          const [listed] = await listKeys(t, owner.session);
          if (res.status === 201) lookup = res.body.lookup;
          expect(listed.lookup).toBe(lookup);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('answers any query on the org lists with 200 or a 400 naming a parameter', async () => {
    const param = fc.constantFrom(
      'action',
      'actor_id',
      'target_id',
      'since',
      'until',
      'limit',
      'cursor',
      'state',
      'user_id',
      '__proto__',
    );
    const query = fc.array(fc.tuple(param, fc.string({ maxLength: 40 })), { maxLength: 4 });
    const path = fc.constantFrom('/audit-events', '/api-keys', '/members');
    await fc.assert(
      fc.asyncProperty(path, query, async (p, pairs) => {
        const qs = new URLSearchParams(pairs).toString();
        const res = await t.api.get(`/orgs/${owner.orgId}${p}?${qs}`, owner.session);
        expect([200, 400], res.text).toContain(res.status);
        if (res.status === 400)
          expect(res.body.message).toMatch(/action|actor_id|target_id|since|until|limit|cursor|state|user_id/);
      }),
      { numRuns: RUNS * 2 },
    );
  });
});
