import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ApiClient } from '../support/http.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';

const root = resolve(import.meta.dirname, '../..');
const consumer = join(root, 'test/host/consumer');
const consumerOut = join(root, 'test-artifacts/host-consumer');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

function run(args: string[], cwd = root): string {
  const r = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Bare specifiers (packages) reachable from a built file through static and dynamic imports. */
function reachablePackages(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const code = readFileSync(file, 'utf8');
    // Module specifiers only: import lines, re-exports, the closing line of a multi-line import,
    // dynamic import(). (Not any string after the word "from": a property or parameter named
    // `from` compiles to the literal "from" followed by more strings.)
    const specifiers = /^import\s[^'"]*?['"]([^'"]+)['"]|^export\s[^'"]*?\bfrom\s*['"]([^'"]+)['"]|^\}\s*from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]/gm;
    for (const m of code.matchAll(specifiers)) {
      const spec = m[1] ?? m[2] ?? m[3] ?? m[4];
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
  };
  visit(entry);
  return packages;
}

describe(`the built package, imported as '${pkg.name}'`, () => {
  beforeAll(() => {
    // `npm run build` when dist/ is missing or older than src/ (the rule `npm start` uses), then a
    // host's own tsc against the emitted declarations.
    run([join(root, 'scripts/run-built.mjs'), 'index.js']);
    run([join(root, 'node_modules/typescript/bin/tsc'), '-p', join(consumer, 'tsconfig.json')]);
  }, 120_000);

  it('resolves by its own name through the exports map and exposes the public API', () => {
    const names = JSON.parse(run([join(consumer, 'list-exports.mjs')])) as string[];
    expect(names).toEqual(
      expect.arrayContaining([
        'KeysUsageIdentityModule', 'KEYS_USAGE_IDENTITY_OPTIONS',
        'Authenticated', 'SessionOnly', 'RequireScopes', 'CurrentPrincipal', 'Charges',
        'CredentialGuard', 'SessionOnlyGuard', 'ScopesGuard', 'ChargeInterceptor',
        'UsageService', 'UsageLimitExceededError', 'UnknownOrgError', 'METERS', 'isMeter', 'DEFAULT_PLAN_LIMITS',
        'ApiKeysService', 'OrgDirectory', 'TypeOrmOrgDirectory', 'memberKey',
        'ENTITIES', 'MIGRATIONS', 'runMigrationsLocked', 'Clock', 'SystemClock', 'SCOPES', 'ROLES', 'PLANS',
      ]),
    );
  });

  it('needs nothing at run time beyond its dependencies, its peers and Node itself (no Fastify, no PGlite)', () => {
    const allowed = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]);
    const used = [...reachablePackages(join(root, 'dist/index.js'))].filter((p) => !p.startsWith('node:') && !builtinModules.includes(p));
    expect(used.filter((p) => !allowed.has(p))).toEqual([]);
    for (const standaloneOnly of ['fastify', '@nestjs/platform-fastify', '@nestjs/platform-express', '@electric-sql/pglite', '@electric-sql/pglite-socket']) {
      expect(used).not.toContain(standaloneOnly);
    }
    expect(used).toEqual(expect.arrayContaining(['@nestjs/common', '@nestjs/core', '@nestjs/typeorm', 'typeorm']));
  });

  describe('an ESM TypeScript host compiled with tsc against it, running on Express', () => {
    let db: TestDatabase;
    let child: ChildProcess;
    let api: ApiClient;

    beforeAll(async () => {
      db = await createTestDatabase();
      child = spawn(process.execPath, [join(consumerOut, 'main.mjs')], {
        cwd: root,
        env: { ...process.env, DATABASE_URL: db.url, API_KEY_SECRET: TEST_API_KEY_SECRET, SESSION_JWT_SECRET: TEST_SESSION_SECRET, PORT: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const port = await new Promise<number>((resolvePort, reject) => {
        let out = '';
        let err = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const m = /listening (\d+)/.exec(out);
          if (m) resolvePort(Number(m[1]));
        });
        child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
        child.once('exit', (code) => reject(new Error(`the host exited (${code}) before listening:\n${err}`)));
      });
      api = new ApiClient(`http://127.0.0.1:${port}`);
    }, 60_000);

    afterAll(async () => {
      if (child && child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await db?.drop();
    });

    it('mints a key with a session, lets the write key through its guarded route and charges it, refuses a read-only key', async () => {
      const seed = new Seeder(db.pool);
      const w = await seed.world('owner');
      const write = await api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:write'] });
      const read = await api.post('/api-keys', w.session, { org_id: w.orgId });
      expect([write.status, read.status]).toEqual([201, 201]);

      const ok = await api.post('/decisions', write.body.key, { title: 'ship it' });
      expect(ok.status).toBe(201);
      expect(ok.body).toEqual({ org_id: w.orgId, title: 'ship it' });
      const { rows } = await db.pool.query(`SELECT captures FROM usage_counters WHERE org_id = $1`, [w.orgId]);
      expect(rows[0].captures).toBe(1);

      expect((await api.post('/decisions', read.body.key, {})).status).toBe(403);
      expect((await api.get('/health')).body).toEqual({ ok: true });
    });
  });
});
