import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

    const minted = await api.post('/api-keys', token, { org_id: orgId, name: 'laptop', scopes: ['decisions:read', 'decisions:write'] });
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
});
