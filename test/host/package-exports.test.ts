import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { builtinModules } from 'node:module';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ApiClient } from '../support/http.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

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
    const specifiers =
      /^import\s[^'"]*?['"]([^'"]+)['"]|^export\s[^'"]*?\bfrom\s*['"]([^'"]+)['"]|^\}\s*from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]/gm;
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
        'KeysUsageIdentityModule',
        'KEYS_USAGE_IDENTITY_OPTIONS',
        'EventsModule',
        'Authenticated',
        'SessionOnly',
        'RequireScopes',
        'CurrentPrincipal',
        'Charges',
        'CredentialGuard',
        'SessionOnlyGuard',
        'ScopesGuard',
        'SpendGuard',
        'BudgetsModule',
        'refuseBeforeHandler',
        'TooManyRequests',
        'LastUseGuard',
        'UsageService',
        'UsageLimitExceededError',
        'UnknownOrgError',
        'METERS',
        'isMeter',
        'DEFAULT_PLAN_LIMITS',
        'ApiKeysService',
        'OrgDirectory',
        'TypeOrmOrgDirectory',
        'memberKey',
        'ENTITIES',
        'MIGRATIONS',
        'runMigrationsLocked',
        'Clock',
        'SystemClock',
        'ScopeRegistry',
        'CONTRACT_SCOPES',
        'ROLES',
        'PLANS',
      ]),
    );
  });

  it('reaches no server-only module from its entry (no Fastify, PGlite, pino, prom-client or terminus)', () => {
    const allowed = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]);
    const used = [...reachablePackages(join(root, 'dist/index.js'))].filter(
      (p) => !p.startsWith('node:') && !builtinModules.includes(p),
    );
    expect(used.filter((p) => !allowed.has(p))).toEqual([]);
    const serverOnly = [
      'fastify',
      '@fastify/static',
      '@nestjs/platform-fastify',
      '@nestjs/platform-express',
      '@electric-sql/pglite',
      '@electric-sql/pglite-socket',
      'pino',
      'pino-http',
      'pino-pretty',
      'nestjs-pino',
      'prom-client',
      '@nestjs/terminus',
    ];
    for (const standaloneOnly of serverOnly) {
      expect(used).not.toContain(standaloneOnly);
    }
    expect(used).toEqual(expect.arrayContaining(['@nestjs/common', '@nestjs/core', '@nestjs/typeorm', 'typeorm']));
  });
});

const library = JSON.parse(readFileSync(join(root, 'library/package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
/** Peers a host installs only for what needs them (pg-boss and standardwebhooks: EventsModule). */
const optionalPeers = Object.keys(library.peerDependenciesMeta).filter(
  (name) => library.peerDependenciesMeta[name].optional,
);
// Outside the repository: a package the host did not install must not be found in the repo's own node_modules.
const scratch = join(tmpdir(), `kui-scratch-host-${process.pid}`);

function npm(args: string[], cwd: string): string {
  const r = spawnSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    timeout: 180_000,
  });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

type LsNode = { version?: string; dependencies?: Record<string, LsNode> };
/** Every installed package in an `npm ls --all --json` tree (an absent optional peer is listed as `{}`: not installed). */
function namesIn(tree: LsNode, into = new Set<string>()): Set<string> {
  for (const [name, child] of Object.entries(tree.dependencies ?? {})) {
    if (child.version) into.add(name);
    namesIn(child, into);
  }
  return into;
}

/** Starts a host process that prints `listening <port>`, and an API client for it. */
async function startHostProcess(
  file: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; api: ApiClient }> {
  const child = spawn(process.execPath, [file], {
    cwd: dirname(file),
    env: { ...process.env, ...env, PORT: '0' },
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
  return { child, api: new ApiClient(`http://127.0.0.1:${port}`) };
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

describe('the library packed by `npm run pack:library` and installed from its tarball into a scratch host', () => {
  let packed: { tarball: string; files: string[]; packages: string[] };
  let shipped: string[];
  let db: TestDatabase;
  const env = () => ({
    DATABASE_URL: db.url,
    API_KEY_SECRET: TEST_API_KEY_SECRET,
    SESSION_JWT_SECRET: TEST_SESSION_SECRET,
  });

  beforeAll(async () => {
    run([join(root, 'scripts/run-built.mjs'), 'index.js']);
    run([join(root, 'node_modules/typescript/bin/tsc'), '-p', join(consumer, 'tsconfig.json')]);
    packed = JSON.parse(run([join(root, 'scripts/pack-library.mjs')])) as typeof packed;
    shipped = spawnSync('tar', ['tzf', packed.tarball], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);

    // A new host project: the peers at the versions this repo tests with, then the tarball.
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    writeFileSync(
      join(scratch, 'package.json'),
      JSON.stringify({ name: 'scratch-host', private: true, type: 'module' }),
    );
    const version = (name: string) =>
      (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
        .version;
    const peers = [
      ...Object.keys(library.peerDependencies).filter((name) => !optionalPeers.includes(name)),
      '@nestjs/platform-express',
    ].map((name) => `${name}@${version(name)}`);
    npm(['install', '--prefer-offline', ...peers], scratch);
    npm(['install', '--prefer-offline', packed.tarball], scratch);
    for (const f of ['main.mjs', 'app.module.mjs', 'accounts-org-directory.mjs'])
      cpSync(join(consumerOut, f), join(scratch, f));
    for (const f of ['commonjs-host.cjs', 'events-host.mjs']) cpSync(join(consumer, f), join(scratch, f));
    db = await createTestDatabase();
  }, 300_000);

  afterAll(async () => {
    await db?.drop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('ships the dist files reachable from dist/index.js, the guide and the manifest, and none of the server', () => {
    expect(shipped).toEqual(
      expect.arrayContaining([
        'package/package.json',
        'package/README.md',
        'package/docs/embedding.md',
        'package/dist/index.js',
        'package/dist/index.d.ts',
      ]),
    );
    for (const serverOnly of [
      'main.js',
      'bootstrap.js',
      'app.module.js',
      'cli/',
      'health/',
      'metrics/',
      'observability/',
      'account/',
      'database/embedded.js',
      'http/',
    ]) {
      expect(shipped.filter((f) => f.startsWith(`package/dist/${serverOnly}`))).toEqual([]);
    }
    // The packed README links the guide, and the guide is in the package.
    expect(readFileSync(join(scratch, 'node_modules/keys-usage-identity/README.md'), 'utf8')).toContain(
      '](docs/embedding.md)',
    );
  });

  it("puts none of the server's dependencies into the host's `npm ls --all`", () => {
    const serverOnly = Object.keys(pkg.dependencies).filter(
      (name) => !(name in library.dependencies) && !(name in library.peerDependencies),
    );
    expect(serverOnly).toEqual(
      expect.arrayContaining([
        'pino',
        'nestjs-pino',
        'prom-client',
        '@nestjs/terminus',
        '@electric-sql/pglite',
        'fastify',
        '@fastify/static',
      ]),
    );
    const installed = namesIn(JSON.parse(npm(['ls', '--all', '--json'], scratch)) as LsNode);
    expect(installed.has('keys-usage-identity')).toBe(true);
    expect(serverOnly.filter((name) => installed.has(name))).toEqual([]);
    // The events peers are optional: a host that does not import EventsModule goes without them.
    expect(optionalPeers.sort()).toEqual(['pg-boss', 'standardwebhooks']);
    expect(optionalPeers.filter((name) => installed.has(name))).toEqual([]);
    const manifest = JSON.parse(
      readFileSync(join(scratch, 'node_modules/keys-usage-identity/package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      'dataloader',
      'jsonwebtoken',
      'jwks-rsa',
      'lru-cache',
      'passport-custom',
      'passport-jwt',
      'rate-limiter-flexible',
    ]);
  });

  it("needs at run time only its manifest's dependencies and peers and Node itself", () => {
    const allowed = new Set([...Object.keys(library.dependencies), ...Object.keys(library.peerDependencies)]);
    expect(packed.packages.filter((p) => !allowed.has(p))).toEqual([]);
  });

  it('boots the ESM TypeScript host (compiled by tsc) from the installed tarball: mints with a session, guards and charges the host route', async () => {
    const { child, api } = await startHostProcess(join(scratch, 'main.mjs'), env());
    try {
      const seed = new Seeder(db.pool);
      const w = await seed.world('owner');
      const write = await api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:write'] });
      const read = await api.post('/api-keys', w.session, { org_id: w.orgId });
      expect([write.status, read.status]).toEqual([201, 201]);

      const ok = await api.post('/decisions', write.body.key, { title: 'ship it' });
      expect(ok.status).toBe(201);
      expect(ok.body).toEqual({ org_id: w.orgId, title: 'ship it' });
      // GET /usage writes the instance's pending counts first (leased charging), then reads them.
      expect((await api.get('/usage', w.session)).body.captures).toMatchObject({ used: 1 });
      const { rows } = await db.pool.query(`SELECT captures FROM usage_counters WHERE org_id = $1`, [w.orgId]);
      expect(rows[0].captures).toBe(1);

      expect((await api.post('/decisions', read.body.key, {})).status).toBe(403);
      expect((await api.get('/health')).body).toEqual({ ok: true });
    } finally {
      await stop(child);
    }
  });

  it('loads in a CommonJS host through require(esm) and serves /me', async () => {
    const { child, api } = await startHostProcess(join(scratch, 'commonjs-host.cjs'), env());
    try {
      const w = await new Seeder(db.pool).world('member');
      const me = await api.get('/me', w.session);
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ user_id: w.userId, org_id: w.orgId, org_role: 'member' });
      expect((await api.get('/me')).status).toBe(401);
    } finally {
      await stop(child);
    }
  });
  it('exports EventsModule; a host importing it without pg-boss and standardwebhooks stops at start with a message naming them', async () => {
    const names = JSON.parse(
      run(
        [
          '--input-type=module',
          '-e',
          "import * as lib from 'keys-usage-identity'; process.stdout.write(JSON.stringify(Object.keys(lib)))",
        ],
        scratch,
      ),
    ) as string[];
    expect(names).toContain('EventsModule');
    await expect(startHostProcess(join(scratch, 'events-host.mjs'), env())).rejects.toThrow(
      /EventsModule needs its optional peer dependencies: npm install pg-boss standardwebhooks/,
    );
  });

  it('a host that imports EventsModule, with its optional peers installed, receives a signed event at its webhook', async () => {
    npm(
      [
        'install',
        '--prefer-offline',
        ...optionalPeers.map(
          (name) =>
            `${name}@${(JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version}`,
        ),
      ],
      scratch,
    );
    const receiver = new WebhookReceiver();
    const url = await receiver.start();
    const { child, api } = await startHostProcess(join(scratch, 'events-host.mjs'), env());
    try {
      const w = await new Seeder(db.pool).world('owner');
      const hook = await api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] });
      expect(hook.status).toBe(201);
      receiver.secret = hook.body.secret;
      const minted = await api.post('/api-keys', w.session, { org_id: w.orgId, name: 'from the host' });
      expect(minted.status).toBe(201);
      await receiver.until(() =>
        receiver.ofType('api_key.created').some((r) => r.verified!.data.id === minted.body.id),
      );
      const event = receiver.ofType('api_key.created').find((r) => r.verified!.data.id === minted.body.id)!;
      expect(event.verified!.data).toMatchObject({ org_id: w.orgId, name: 'from the host' });
      expect(event.body).not.toContain(minted.body.key);
    } finally {
      await stop(child);
      await receiver.stop();
    }
  }, 60_000);
});
