import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

const RUNS = 40;

/** Hostile input on the events routes: any body is a 2xx or a 4xx, never a 5xx or a partial write. */
describe('hostile input on webhook and leaked-key routes', () => {
  let t: TestApp;
  let owner: { orgId: string; session: string };
  let hookId: string;

  beforeAll(async () => {
    t = await startTestApp({ env: { CREDENTIALS_REVOKE_LIMIT: '0' } });
    owner = await t.seed.world('owner');
    hookId = (
      await t.api.post(`/orgs/${owner.orgId}/webhooks`, owner.session, {
        url: 'https://hooks.test/x',
        event_types: ['api_key.created'],
      })
    ).body.id;
  });
  afterAll(async () => t?.close());

  const field = (name: string) => fc.record({ [name]: fc.jsonValue() }, { requiredKeys: [] });

  it('answers any create body with 201 or a 400, and writes an endpoint only on 201', async () => {
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record(
        { url: fc.oneof(fc.jsonValue(), fc.webUrl()), event_types: fc.jsonValue(), description: fc.jsonValue() },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const before = (await t.db.pool.query(`SELECT count(*)::int AS n FROM webhook_endpoints`)).rows[0].n;
        const res = await t.api.post(`/orgs/${owner.orgId}/webhooks`, owner.session, b);
        expect([201, 400], res.text).toContain(res.status);
        const after = (await t.db.pool.query(`SELECT count(*)::int AS n FROM webhook_endpoints`)).rows[0].n;
        expect(after - before).toBe(res.status === 201 ? 1 : 0);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers any update body with 200 or a 400', async () => {
    const body = fc.oneof(fc.jsonValue(), field('enabled'), field('event_types'), field('url'), field('description'));
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await t.api.request('PATCH', `/orgs/${owner.orgId}/webhooks/${hookId}`, {
          token: owner.session,
          body: b,
        });
        expect([200, 400], res.text).toContain(res.status);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers any report to /credentials/revoke with 202 or a 400, and anything GitHub-shaped without a signature with 401 or 503', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue(),
          field('credentials'),
          fc.record({ credentials: fc.array(fc.string({ maxLength: 80 }), { minLength: 1, maxLength: 5 }) }),
        ),
        async (b) => {
          const res = await t.api.post('/credentials/revoke', undefined, b);
          expect([202, 400], res.text).toContain(res.status);
          const gh = await t.api.post('/secret-scanning/github', undefined, b, {
            'github-public-key-identifier': 'x',
            'github-public-key-signature': 'x',
          });
          expect([401, 503], gh.text).toContain(gh.status);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
