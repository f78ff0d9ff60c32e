import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../support/http.js';
import { runCli, startServer, type ServerProcess } from '../support/processes.js';

/**
 * The zero-setup path a new user takes: `npm start` with no environment (embedded PGlite,
 * generated development secrets), the operator CLI beside the running server, and a restart
 * that keeps every key.
 */
describe('a fresh clone with no environment, on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kui-embedded-'));
  const env = { DATA_DIR: dataDir, NODE_ENV: 'development' };
  let server: ServerProcess;
  let api: ApiClient;

  beforeAll(async () => {
    server = await startServer(env, 60_000);
    api = new ApiClient(server.url);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('generates its development secrets once, into a file only the owner can read, and never prints them', () => {
    const secrets = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8'));
    expect(Object.keys(secrets).sort()).toEqual(['API_KEY_SECRET', 'SESSION_JWT_SECRET']);
    expect(statSync(join(dataDir, 'secrets.json')).mode & 0o077).toBe(0);
    for (const value of Object.values(secrets) as string[]) expect(server.output()).not.toContain(value);
  });

  it('serves the whole tour: CLI set-up beside the running server, a session, a key, /me, 401 and 403', async () => {
    const org = await runCli(['org', 'create', '--name', 'Acme', '--plan', 'pro'], env);
    expect(org.code, org.stderr).toBe(0);
    expect(Object.keys(org.json()).sort()).toEqual(['id', 'name', 'plan']);
    const user = await runCli(['user', 'create', '--email', 'ada@example.com'], env);
    expect(user.code, user.stderr).toBe(0);
    const orgId = org.json().id;
    const userId = user.json().id;
    expect((await runCli(['member', 'add', '--org', orgId, '--user', userId, '--role', 'owner'], env)).code).toBe(0);
    expect((await runCli(['workspace', 'create', '--org', orgId, '--user', userId], env)).code).toBe(0);
    const session = await runCli(['session', '--user', userId], env);
    expect(session.code, session.stderr).toBe(0);
    const token = session.json().token;

    expect((await api.get('/me')).status).toBe(401);
    const me = await api.get('/me', token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user_id: userId, org_id: orgId, email: 'ada@example.com', org_role: 'owner' });

    const minted = await api.post('/api-keys', token, {
      org_id: orgId,
      name: 'laptop',
      scopes: ['decisions:read', 'decisions:write'],
    });
    expect(minted.status).toBe(201);
    expect((await api.get('/me', minted.body.key)).status).toBe(200);
    expect((await api.get('/api-keys', minted.body.key)).status).toBe(403);

    const usage = await api.get('/usage', minted.body.key);
    expect(usage.body).toMatchObject({ plan: 'pro', mcp_queries: { used: 0, limit: null } });

    // A restart keeps the data and the generated secrets: the key and the session still work.
    await server.stop();
    server = await startServer(env, 60_000);
    api = new ApiClient(server.url);
    expect((await api.get('/me', minted.body.key)).status).toBe(200);
    expect((await api.get('/me', token)).status).toBe(200);
  }, 120_000);

  it('serves as its own service role after migrating as the owner: no session on it can remove an audit event', async () => {
    // The server's socket shares the server's one session: what a client sees here, the server is.
    const client = new pg.Client({ host: dataDir, port: 5432, user: 'postgres', database: 'postgres' });
    await client.connect();
    try {
      expect((await client.query(`SELECT current_user AS role`)).rows).toEqual([{ role: 'kui_service' }]);
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_events`);
      expect(rows[0].n).toBeGreaterThan(0);
      for (const sql of [
        `DELETE FROM audit_events`,
        `BEGIN; SELECT set_config('audit.retention', 'on', true); DELETE FROM audit_events; COMMIT`,
        `UPDATE audit_events SET details = '{}'`,
        `TRUNCATE audit_events`,
        `ALTER TABLE audit_events DISABLE TRIGGER ALL`,
      ]) {
        await expect(client.query(sql), sql).rejects.toThrow(/permission denied|must be owner/);
        await client.query('ROLLBACK').catch(() => undefined);
      }
      expect((await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_events`)).rows[0].n).toBe(
        rows[0].n,
      );
      // The job queue's schema was created by, and belongs to, the service role.
      expect(
        (await client.query(`SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = 'pgboss'`)).rows,
      ).toEqual([{ owner: 'kui_service' }]);
    } finally {
      await client.end();
    }
  });
});

/**
 * The verification cache on the embedded database: on, with no lease (one process), and coherent
 * with every writer: the server's own requests and the operator CLI's changes through the
 * server's socket both stop a cached credential before they answer.
 */
describe('the verification cache on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kui-embedded-cache-'));
  const env = { DATA_DIR: dataDir, NODE_ENV: 'development', METRICS_CACHE_MS: '0' };
  let server: ServerProcess;
  let api: ApiClient;

  beforeAll(async () => {
    server = await startServer(env, 60_000);
    api = new ApiClient(server.url);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const cli = async (args: string[]) => {
    const r = await runCli(args, env);
    expect(r.code, r.stderr).toBe(0);
    return r.json();
  };
  /** verification_cache_lookups_total{cache,result} as the server exports it. */
  const lookups = async (cache: 'key' | 'session', result: 'hit' | 'miss') => {
    const res = await api.get('/metrics');
    expect(res.status).toBe(200);
    const line = res.text
      .split('\n')
      .find((l) => l.startsWith(`verification_cache_lookups_total{cache="${cache}",result="${result}"}`));
    return Number(line?.split(' ').pop() ?? 0);
  };
  const leaseValid = async () => /^verification_cache_lease_valid 1$/m.test((await api.get('/metrics')).text);

  async function member(orgId: string, role: string) {
    const user = await cli(['user', 'create', '--email', `${role}-${Date.now()}@example.com`]);
    await cli(['member', 'add', '--org', orgId, '--user', user.id, '--role', role]);
    await cli(['workspace', 'create', '--org', orgId, '--user', user.id]);
    const session = (await cli(['session', '--user', user.id])).token as string;
    const minted = await api.post('/api-keys', session, { org_id: orgId, name: 'cached', scopes: ['decisions:read'] });
    expect(minted.status).toBe(201);
    return { userId: user.id as string, session, key: minted.body.key as string, keyId: minted.body.id as string };
  }

  it('answers from the cache, and a revoke, a member removal and a plan change by the CLI stop the cached answer on the very next request', async () => {
    expect(await leaseValid()).toBe(true);
    const org = await cli(['org', 'create', '--name', 'Cached', '--plan', 'pro']);
    const owner = await member(org.id, 'owner');
    const dev = await member(org.id, 'admin');

    // Warm: the first verification reads the database, the following ones are cache hits.
    for (const k of [owner.key, dev.key]) expect((await api.get('/me', k)).status).toBe(200);
    const keyHits = await lookups('key', 'hit');
    for (let i = 0; i < 5; i++)
      for (const k of [owner.key, dev.key]) expect((await api.get('/me', k)).status).toBe(200);
    expect(await lookups('key', 'hit')).toBeGreaterThanOrEqual(keyHits + 10);
    expect((await api.get('/me', dev.session)).body.org_id).toBe(org.id);
    const sessionHits = await lookups('session', 'hit');
    expect((await api.get('/me', dev.session)).body).toMatchObject({ org_id: org.id, org_role: 'admin' });
    expect(await lookups('session', 'hit')).toBeGreaterThan(sessionHits);

    // A plan change by the CLI: the next request through a cached key sees the new plan.
    expect((await api.get('/usage', owner.key)).body.plan).toBe('pro');
    await cli(['org', 'set-plan', '--org', org.id, '--plan', 'free']);
    expect((await api.get('/usage', owner.key)).body.plan).toBe('free');

    // A member removed by the CLI: their cached key and cached org standing stop at once.
    await cli(['member', 'remove', '--org', org.id, '--user', dev.userId]);
    expect((await api.get('/me', dev.key)).status).toBe(401);
    const me = await api.get('/me', dev.session);
    expect(me.status).toBe(200);
    expect(me.body.org_id).toBeNull();

    // A revoke over HTTP: the next request with the cached key is refused.
    expect((await api.get('/me', owner.key)).status).toBe(200);
    expect((await api.delete(`/api-keys/${owner.keyId}`, owner.session)).status).toBe(204);
    expect((await api.get('/me', owner.key)).status).toBe(401);
  }, 120_000);
});
