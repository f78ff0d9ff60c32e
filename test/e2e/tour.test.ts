import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { childEnv, ROOT, startServer, type ServerProcess } from '../support/processes.js';
import { TEST_SESSION_SECRET } from '../support/seed.js';

function runTour(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, [resolve(ROOT, 'scripts/tour.mjs')], { cwd: ROOT, env: childEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => ok({ code, stdout, stderr }));
  });
}

/**
 * Development on a PostgreSQL of your own (DATABASE_URL set, no secrets): the secrets are
 * generated once under DATA_DIR and the log says so, API keys work, and the README's tour
 * (scripts/tour.mjs) runs against it on any port, as often as you like.
 */
describe('development secrets with DATABASE_URL, and the tour run twice against a live server', () => {
  let db: TestDatabase;
  let dataDir: string;
  let server: ServerProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'kui-tour-'));
    env = { NODE_ENV: 'development', LOG_FORMAT: 'json', DATABASE_URL: db.url, DATA_DIR: dataDir, DB_MIGRATE: 'false' };
    server = await startServer(env);
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await db?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('generates the missing secrets once under DATA_DIR, says so in the log, and never prints them', () => {
    const file = join(dataDir, 'secrets.json');
    const secrets = JSON.parse(readFileSync(file, 'utf8'));
    expect(Object.keys(secrets).sort()).toEqual(['API_KEY_SECRET', 'SESSION_JWT_SECRET']);
    expect(statSync(file).mode & 0o077).toBe(0);
    expect(server.output()).toMatch(
      /Generated development secret\(s\) SESSION_JWT_SECRET, API_KEY_SECRET in .*secrets\.json/,
    );
    expect(server.output()).not.toMatch(/not configured/);
    for (const value of Object.values(secrets) as string[]) expect(server.output()).not.toContain(value);
  });

  it('runs the tour against the server on its ephemeral port, twice, each run creating what it needs', async () => {
    const tourEnv = { ...env, BASE_URL: server.url };
    for (const attempt of [1, 2]) {
      const res = await runTour(tourEnv);
      expect(res.code, `run ${attempt}: ${res.stderr}`).toBe(0);
      expect(res.stdout).toContain(`Tour against ${server.url}`);
      expect(res.stdout).toMatch(/201 {2}mint a key/);
      expect(res.stdout).toMatch(/401 {2}the revoked key stops working/);
      expect(res.stdout).toContain('Tour complete.');
    }
    const { rows } = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM orgs WHERE name LIKE 'Acme %'`);
    expect(Number(rows[0].n)).toBe(2);
  }, 120_000);

  it('honours PORT when BASE_URL is unset, and says plainly when no server answers', async () => {
    const res = await runTour({ ...env, PORT: '1' });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toMatch(/^tour failed: no server answers at http:\/\/localhost:1 .*npm start/);
  });

  it('keeps the generated secrets across a restart and says it reused them', async () => {
    const before = readFileSync(join(dataDir, 'secrets.json'), 'utf8');
    await server.stop();
    server = await startServer(env);
    expect(readFileSync(join(dataDir, 'secrets.json'), 'utf8')).toBe(before);
    expect(server.output()).toMatch(
      /Using development secret\(s\) SESSION_JWT_SECRET, API_KEY_SECRET from .*secrets\.json/,
    );
    expect(server.output()).not.toMatch(/Generated development secret/);
  }, 60_000);

  it('generates nothing in production: API keys stay unconfigured (501) and no file is written', async () => {
    const prodDir = mkdtempSync(join(tmpdir(), 'kui-prod-'));
    try {
      const prod = await startServer({
        NODE_ENV: 'production',
        DATABASE_URL: db.url,
        DATA_DIR: prodDir,
        DB_MIGRATE: 'false',
        SESSION_JWT_SECRET: TEST_SESSION_SECRET,
      });
      await prod.stop();
      expect(existsSync(join(prodDir, 'secrets.json'))).toBe(false);
      expect(prod.output()).toMatch(/API_KEY_SECRET is not set: API keys are not configured/);
      expect(prod.output()).not.toMatch(/development secret/);
    } finally {
      rmSync(prodDir, { recursive: true, force: true });
    }
  }, 60_000);
});
