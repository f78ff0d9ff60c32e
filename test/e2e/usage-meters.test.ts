import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageLimitExceededError } from '../../src/common/meters.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { testPrincipal } from '../support/principal.js';
import { cliEnv } from '../support/cli.js';
import { runCli } from '../support/processes.js';
import { startTestApp, testConfig, type TestApp } from '../support/test-app.js';

/** The deployment's own meters, as the standalone server reads them from USAGE_METERS, and their limits. */
const USAGE_METERS = JSON.stringify({
  exports: { description: 'Report exports' },
  pages: { description: 'Pages rendered' },
});
const PLAN_LIMITS = JSON.stringify({ free: { exports: 3 } });
const CONTRACT_FIELDS = ['plan', 'mcp_queries', 'breakdown', 'imports', 'captures', 'resets_at'];

/**
 * A standalone deployment with USAGE_METERS (on the real clock: the CLI charges and exports beside
 * it). Every response is checked against the running server's OpenAPI document by the ApiClient.
 */
describe('meters the deployment defines (USAGE_METERS)', () => {
  let t: TestApp;
  let usage: UsageService;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(args, env);
  const today = () => new Date().toISOString().slice(0, 10);

  beforeAll(async () => {
    t = await startTestApp({ env: { USAGE_METERS, PLAN_LIMITS } });
    usage = t.app.get(UsageService);
    env = cliEnv(t.db.url, { USAGE_METERS, PLAN_LIMITS });
  });
  afterAll(async () => t?.close());

  /** An org with an owner's key, and that key charged `exports` twice. */
  async function charged() {
    const w = await t.seed.world('owner', 'free');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    expect(minted.status).toBe(201);
    const by = testPrincipal({ orgId: w.orgId, userId: w.userId, keyId: minted.body.id, plan: 'free' });
    await usage.charge(w.orgId, 'exports', 2, by);
    await usage.charge(w.orgId, 'asks', 1, by);
    // Leased charging writes the counts within a second: the CLI's export reads the tables.
    await usage.settle();
    return { ...w, key: minted.body.key as string, keyId: minted.body.id as string };
  }

  it('GET /usage keeps every contract field as it was and adds every meter by name, the deployment’s with their limits', async () => {
    const w = await charged();

    const res = await t.api.get('/usage', w.key);

    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual([...CONTRACT_FIELDS, 'meters']);
    expect(res.body).toMatchObject({
      plan: 'free',
      mcp_queries: { used: 1, limit: 100 },
      breakdown: { asks: 1, retrieves: 0 },
      imports: { used: 0, limit: 10 },
      captures: { used: 0, limit: 100 },
    });
    expect(res.body.meters).toEqual({
      asks: { used: 1, limit: 100 },
      retrieves: { used: 0, limit: 100 },
      imports: { used: 0, limit: 10 },
      captures: { used: 0, limit: 100 },
      exports: { used: 2, limit: 3 },
      pages: { used: 0, limit: null },
    });
    // A session reads the same (no verification snapshot: both reads in one turn).
    expect((await t.api.get('/usage', w.session)).body.meters).toEqual(res.body.meters);
  });

  it('refuses a charge past a deployment meter’s limit, recording nothing', async () => {
    const w = await charged();

    await expect(usage.charge(w.orgId, 'exports', 2)).rejects.toBeInstanceOf(UsageLimitExceededError);
    expect((await t.api.get('/usage', w.key)).body.meters.exports).toEqual({ used: 2, limit: 3 });
  });

  it('GET /usage/daily and a key’s daily usage show the deployment’s meters each day', async () => {
    const w = await charged();

    const org = await t.api.get(`/usage/daily?from=${today()}&to=${today()}`, w.key);
    const key = await t.api.get(`/api-keys/${w.keyId}/usage?from=${today()}&to=${today()}`, w.session);

    expect(org.status).toBe(200);
    expect(org.body.days[0].meters).toMatchObject({ exports: { used: 2, limit: 3 }, pages: { used: 0, limit: null } });
    expect(key.status).toBe(200);
    expect(key.body.days[0].meters).toMatchObject({ exports: { used: 2, limit: 3 }, asks: { used: 1, limit: 100 } });
  });

  it('documents the running deployment’s meters in GET /usage’s meters schema', async () => {
    const doc = (await t.api.get('/openapi.json')).body;
    const meters = doc.components.schemas.UsageMeters;

    expect(meters.required).toEqual(['asks', 'retrieves', 'imports', 'captures', 'exports', 'pages']);
    expect(meters.additionalProperties).toBe(false);
    expect(meters.properties.exports).toEqual({
      description: 'Report exports',
      allOf: [{ $ref: '#/components/schemas/Meter' }],
    });
    expect(doc.components.schemas.UsageReport.properties.meters.allOf).toEqual([
      { $ref: '#/components/schemas/UsageMeters' },
    ]);
  });

  it('usage record charges a deployment meter; an undefined one is a usage error (exit 2) that charges nothing', async () => {
    const w = await t.seed.world('owner', 'free');

    const ok = await cli('usage', 'record', '--org', w.orgId, '--meter', 'exports', '--count', '2');
    const undefinedMeter = await cli('usage', 'record', '--org', w.orgId, '--meter', 'export');
    const over = await cli('usage', 'record', '--org', w.orgId, '--meter', 'exports', '--count', '2');

    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.json()).toMatchObject({ org_id: w.orgId, meter: 'exports', count: 2, used: 2, asks: 0 });
    expect(undefinedMeter.code).toBe(2);
    expect(undefinedMeter.stdout).toBe('');
    expect(undefinedMeter.stderr).toContain(
      '--meter must be one of asks, retrieves, imports, captures, exports, pages; got "export"',
    );
    expect(over.code).toBe(1);
    expect(over.stderr).toMatch(/Daily exports limit reached: 2 of 3 used, 2 more requested/);
    expect((await t.api.get('/usage', w.session)).body.meters.exports).toEqual({ used: 2, limit: 3 });
  }, 60_000);

  it('usage export adds the deployment’s meters: per day with their limits, per key with what each charged', async () => {
    const w = await charged();

    const csv = await cli('usage', 'export', '--org', w.orgId, '--from', today());
    const jsonl = await cli('usage', 'export', '--org', w.orgId, '--from', today(), '--by-key', '--format', 'jsonl');

    expect(csv.code, csv.stderr).toBe(0);
    expect(csv.stdout.trim().split('\n')).toEqual([
      'day,plan,asks,retrieves,imports,captures,wallet_limit,imports_limit,captures_limit,' +
        'meters.exports.used,meters.exports.limit,meters.pages.used,meters.pages.limit',
      `${today()},free,1,0,0,0,100,10,100,2,3,0,`,
    ]);
    expect(jsonl.code, jsonl.stderr).toBe(0);
    expect(JSON.parse(jsonl.stdout)).toEqual({
      day: today(),
      credential_kind: 'api_key',
      credential_id: w.keyId,
      user_id: w.userId,
      asks: 1,
      retrieves: 0,
      imports: 0,
      captures: 0,
      meters: { exports: 2, pages: 0 },
    });
  }, 60_000);
});

describe('a malformed USAGE_METERS, or PLAN_LIMITS naming a meter it does not define', () => {
  it('stops the start with one line naming the variable and the entry', () => {
    expect(() => testConfig('postgres://unused', { USAGE_METERS: '{"exports":{"description":""}}' })).toThrow(
      /^Invalid configuration:\n {2}USAGE_METERS\["exports"\]\.description must be a string of 1 to 500 characters$/,
    );
    expect(() => testConfig('postgres://unused', { USAGE_METERS, PLAN_LIMITS: '{"free":{"exprots":1}}' })).toThrow(
      /^Invalid configuration:\n {2}PLAN_LIMITS\.free: unknown meter "exprots" \(allowed: wallet, imports, captures, exports, pages\)$/,
    );
  });
});
