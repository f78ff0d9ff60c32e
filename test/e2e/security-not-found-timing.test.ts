import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { ApiKeyStore } from '../../src/auth/api-key-store.js';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { AuthMetrics } from '../../src/auth/auth-metrics.js';
import { OrgDirectory } from '../../src/directory/org-directory.js';
import { wrongSecretFor } from '../support/forged-keys.js';
import type { ApiResponse } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * "Missing" and "someone else's" must be indistinguishable, in the answer and in the time it
 * takes (otherwise timing tells an attacker which org or key ids exist). Both cases run
 * interleaved in pairs, in a random order within each pair, so load on a shared machine hits
 * both alike; the comparison: paired wins near one half, medians within a factor, and for the
 * key's lookup id the whole distributions held together (Mann-Whitney AUC near one half).
 */
const PAIRS = 150;
const WARM_UP = 20;

interface Comparison {
  /** Share of pairs in which case A answered faster than case B (0.5 when indistinguishable). */
  aFaster: number;
  medianRatio: number;
  /**
   * Mann-Whitney U / (n·m): the chance that a random A time exceeds a random B time (ties count
   * half), over all samples. 0.5 when the distributions are the same, whatever their shape.
   */
  auc: number;
}

const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)];

/** The Mann-Whitney AUC of `as` against `bs` (average ranks for ties). */
function mannWhitneyAuc(as: number[], bs: number[]): number {
  const all = [...as.map((v) => ({ v, a: true })), ...bs.map((v) => ({ v, a: false }))].sort((p, q) => p.v - q.v);
  let rankSumA = 0;
  for (let i = 0; i < all.length;) {
    let j = i;
    while (j < all.length && all[j].v === all[i].v) j++;
    const rank = (i + 1 + j) / 2; // the average of ranks i+1 .. j
    for (let k = i; k < j; k++) if (all[k].a) rankSumA += rank;
    i = j;
  }
  const u = rankSumA - (as.length * (as.length + 1)) / 2;
  return u / (as.length * bs.length);
}

async function compare(
  a: () => Promise<ApiResponse>,
  b: () => Promise<ApiResponse>,
  check: (ra: ApiResponse, rb: ApiResponse) => void,
  pairs = PAIRS,
): Promise<Comparison> {
  const time = async (call: () => Promise<ApiResponse>) => {
    const started = performance.now();
    const res = await call();
    return { res, ms: performance.now() - started };
  };
  for (let i = 0; i < WARM_UP; i++) {
    await a();
    await b();
  }
  const as: number[] = [];
  const bs: number[] = [];
  let wins = 0;
  for (let i = 0; i < pairs; i++) {
    const first = Math.random() < 0.5;
    const x = first ? await time(a) : await time(b);
    const y = first ? await time(b) : await time(a);
    const [ta, tb] = first ? [x, y] : [y, x];
    check(ta.res, tb.res);
    as.push(ta.ms);
    bs.push(tb.ms);
    if (ta.ms < tb.ms) wins++;
  }
  return { aFaster: wins / pairs, medianRatio: median(as) / median(bs), auc: mannWhitneyAuc(as, bs) };
}

/** Medians within 25 % of each other: a cache that skipped the database would be several times faster. */
function expectSimilarMedians(c: Comparison): void {
  expect(c.medianRatio, JSON.stringify(c)).toBeGreaterThan(1 / 1.25);
  expect(c.medianRatio, JSON.stringify(c)).toBeLessThan(1.25);
}

/**
 * The two distributions held together: AUC within [0.4, 0.6]. For identical distributions its
 * standard deviation at KEY_PAIRS samples a side is about 0.02, so the band is some five of them
 * wide on each side; the gap this replaced measured 0.605 from outside.
 */
function expectSameDistribution(c: Comparison): void {
  expect(c.auc, JSON.stringify(c)).toBeGreaterThanOrEqual(0.4);
  expect(c.auc, JSON.stringify(c)).toBeLessThanOrEqual(0.6);
}
const KEY_PAIRS = 400;

function expectIndistinguishable(c: Comparison): void {
  // For identical distributions aFaster is 0.5 ± 0.04 (one standard deviation at 150 pairs).
  expect(c.aFaster, JSON.stringify(c)).toBeGreaterThan(0.3);
  expect(c.aFaster, JSON.stringify(c)).toBeLessThan(0.7);
  expect(c.medianRatio, JSON.stringify(c)).toBeGreaterThan(1 / 1.5);
  expect(c.medianRatio, JSON.stringify(c)).toBeLessThan(1.5);
}

describe('the two 404 cases of mint and revoke', () => {
  let t: TestApp;
  let me: { orgId: string; session: string };
  let other: { orgId: string; keyId: string };

  beforeAll(async () => {
    // The control mints a few hundred keys as one user: above the default active-key cap.
    t = await startTestApp({ env: { MAX_ACTIVE_KEYS_PER_USER_ORG: '100000' } });
    me = await t.seed.world('owner');
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    other = { orgId: w.orgId, keyId: minted.body.id };
  });
  afterAll(async () => t?.close());

  const sameAnswer = (message: string) => (ra: ApiResponse, rb: ApiResponse) => {
    const expected = { statusCode: 404, error: 'Not Found', message };
    expect(ra.body).toEqual(expected);
    expect(rb.body).toEqual(expected);
    expect(ra.status).toBe(404);
    expect(rb.status).toBe(404);
    const names = (r: ApiResponse) => [...r.headers.keys()].sort();
    expect(names(ra)).toEqual(names(rb));
    expect(ra.headers.get('content-length')).toBe(rb.headers.get('content-length'));
  };

  it("answers mint for a missing org and for someone else's org identically, in the same time", async () => {
    const c = await compare(
      () => t.api.post('/api-keys', me.session, { org_id: randomUUID() }),
      () => t.api.post('/api-keys', me.session, { org_id: other.orgId }),
      sameAnswer('Organisation not found'),
    );
    expectIndistinguishable(c);
  });

  it("answers revoke of a missing key and of someone else's key identically, in the same time", async () => {
    const c = await compare(
      () => t.api.delete(`/api-keys/${randomUUID()}`, me.session),
      () => t.api.delete(`/api-keys/${other.keyId}`, me.session),
      sameAnswer('API key not found'),
    );
    expectIndistinguishable(c);
    const { rows } = await t.db.pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [other.keyId]);
    expect(rows[0].revoked_at).toBeNull();
  });

  it('would notice a real difference: a 404 against a mint that writes a row', async () => {
    // The control that shows the comparison can fail: a successful mint does one more statement (an INSERT and its commit).
    const c = await compare(
      () => t.api.post('/api-keys', me.session, { org_id: randomUUID() }),
      () => t.api.post('/api-keys', me.session, { org_id: me.orgId }),
      (ra, rb) => {
        expect(ra.status).toBe(404);
        expect(rb.status).toBe(201);
      },
    );
    expect(() => expectIndistinguishable(c), JSON.stringify(c)).toThrow();
  });
});

/**
 * A credential's hidden facts: whether a key's lookup id exists (a wrong secret under a real id
 * against a random key) and whether an org exists (a session naming an org it is not in against
 * a random id). Both cases of each must do the same work: counted exactly (the directory and key
 * store reads), and timed like the 404s above.
 */
describe('the two 401 cases of a key and the two 404 cases of a session org', () => {
  let t: TestApp;
  let me: { orgId: string; userId: string; session: string };
  let foreignOrg: string;
  let key: string;
  let directoryReads: MockInstance;
  let keyReads: MockInstance;

  beforeAll(async () => {
    t = await startTestApp();
    me = await t.seed.world('owner');
    foreignOrg = (await t.seed.world('owner')).orgId;
    key = (await t.api.post('/api-keys', me.session, { org_id: me.orgId })).body.key;
    // The cache is what made the two cases differ: wait for this instance's lease.
    await vi.waitFor(() => expect(t.app.get(AuthMetrics, { strict: false }).leaseValid()).toBe(true), {
      timeout: 10_000,
    });
    directoryReads = vi.spyOn(t.app.get(OrgDirectory, { strict: false }), 'memberContexts');
    keyReads = vi.spyOn(t.app.get(ApiKeyStore, { strict: false }), 'findForVerification');
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await t?.close();
  });

  const orgNotFound = (ra: ApiResponse, rb: ApiResponse) => {
    expect([ra.status, rb.status]).toEqual([404, 404]);
    expect(ra.body).toEqual(rb.body);
  };
  const keyRefused = (ra: ApiResponse, rb: ApiResponse) => {
    expect([ra.status, rb.status]).toEqual([401, 401]);
    expect(ra.body).toEqual(rb.body);
  };
  /** Reads of `spy` a request makes, once the request has been seen before. */
  async function readsOf(spy: MockInstance, call: () => Promise<ApiResponse>): Promise<number[]> {
    await call();
    const counts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const before = spy.mock.calls.length;
      await call();
      counts.push(spy.mock.calls.length - before);
    }
    return counts;
  }

  it('reads the directory once for an org the session is not in, every time, as for a random id', async () => {
    const foreign = () => t.api.get('/me', me.session, { 'x-org-id': foreignOrg });
    const random = () => t.api.get('/me', me.session, { 'x-org-id': randomUUID() });
    orgNotFound(await foreign(), await random());
    expect(await readsOf(directoryReads, foreign)).toEqual([1, 1, 1]);
    expect(await readsOf(directoryReads, random)).toEqual([1, 1, 1]);
  });

  it('answers an org the session is not in and a random id in the same time', async () => {
    expectIndistinguishable(
      await compare(
        () => t.api.get('/me', me.session, { 'x-org-id': foreignOrg }),
        () => t.api.get('/me', me.session, { 'x-org-id': randomUUID() }),
        orgNotFound,
      ),
    );
  });

  it('reads the key store once for a wrong secret under a real, cached lookup id, every time, as for a random key', async () => {
    expect((await t.api.get('/me', key)).status).toBe(200); // the real key verified: its row is cached
    const forged = wrongSecretFor(key);
    const wrongSecret = () => t.api.get('/me', forged);
    const random = () => t.api.get('/me', generateApiKey().key);
    keyRefused(await wrongSecret(), await random());
    expect(await readsOf(keyReads, wrongSecret)).toEqual([1, 1, 1]);
    expect(await readsOf(keyReads, random)).toEqual([1, 1, 1]);
    expect(await readsOf(keyReads, () => t.api.get('/me', key))).toEqual([0, 0, 0]);
  });

  it('reads no row for a wrong secret under a real lookup id: the statement matches the hash too', async () => {
    expect((await t.api.get('/me', key)).status).toBe(200);
    const before = keyReads.mock.results.length;
    keyRefused(await t.api.get('/me', wrongSecretFor(key)), await t.api.get('/me', generateApiKey().key));
    const reads = keyReads.mock.results.slice(before);
    expect(reads).toHaveLength(2);
    for (const read of reads) expect(await read.value).toEqual([]);
  });

  it('answers a wrong secret under a real lookup id and a random key in the same time: the whole distributions', async () => {
    expect((await t.api.get('/me', key)).status).toBe(200);
    const c = await compare(
      () => t.api.get('/me', wrongSecretFor(key)),
      () => t.api.get('/me', generateApiKey().key),
      keyRefused,
      KEY_PAIRS,
    );
    expectSameDistribution(c);
    expectSimilarMedians(c);
  }, 180_000);

  it('would notice a real difference: a key answered from the cache against a random key', async () => {
    // The control that shows the AUC can fail: the cached key skips the keyed hash and the database.
    const c = await compare(
      () => t.api.get('/me', key),
      () => t.api.get('/me', generateApiKey().key),
      (ra, rb) => expect([ra.status, rb.status]).toEqual([200, 401]),
    );
    expect(() => expectSameDistribution(c), JSON.stringify(c)).toThrow();
  });
});
