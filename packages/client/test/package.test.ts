import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';

const root = resolve(import.meta.dirname, '../../..');
// Outside the repository: the client must run on what its own tarball installs.
const scratch = join(tmpdir(), `kui-scratch-client-${process.pid}`);

function exec(command: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: 180_000, env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A consumer of the installed package: the README's lines, type-checked by tsc against the packed declarations. */
const CONSUMER = `
import { ApiError, KeysUsageIdentityClient, LATEST_API_VERSION, type MintKeyRequest } from '@keys-usage-identity/client';

const kui = new KeysUsageIdentityClient({ baseUrl: process.env.BASE_URL!, credential: process.env.SESSION! });
const { id, key } = await kui.keys.mint({ org_id: process.env.ORG_ID!, name: 'from the scratch project' });
const listed: string[] = [];
for await (const k of kui.keys.listAll({ state: 'active' })) listed.push(k.id);
await kui.keys.revoke(id);
const after = await new KeysUsageIdentityClient({ baseUrl: process.env.BASE_URL!, credential: key }).me().catch((e: ApiError) => e.status);
// @ts-expect-error org_id is required
export const missing: MintKeyRequest = { name: 'x' };
console.log(JSON.stringify({ id, listed, after, version: LATEST_API_VERSION }));
`;

describe('the client packed by `npm run pack:client`, installed from its tarball into a scratch project', () => {
  let t: TestApp;
  let packed: { tarball: string; files: string[] };
  let typecheck: string;

  beforeAll(async () => {
    packed = JSON.parse(exec(process.execPath, [join(root, 'scripts/pack-client.mjs')], root)) as typeof packed;
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    writeFileSync(
      join(scratch, 'package.json'),
      JSON.stringify({ name: 'scratch-client', private: true, type: 'module' }),
    );
    exec(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', packed.tarball],
      scratch,
    );
    writeFileSync(join(scratch, 'main.ts'), CONSUMER);
    writeFileSync(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['ES2023', 'DOM'],
          types: [],
          skipLibCheck: false,
        },
        files: ['main.ts', 'env.d.ts'],
      }),
    );
    // The consumer reads process.env; nothing else of Node's types is needed.
    writeFileSync(join(scratch, 'env.d.ts'), 'declare const process: { env: Record<string, string | undefined> };\n');
    // Before the app starts: a synchronous child would stall the service in this process.
    typecheck = exec(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', scratch], scratch);
    t = await startTestApp();
  }, 300_000);

  afterAll(async () => {
    await t?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('ships the compiled client, its declarations, the OpenAPI document and the README, with openapi-fetch its only dependency', () => {
    expect(packed.files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'openapi.json',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/generated/openapi.d.ts',
      ]),
    );
    expect(packed.files.filter((f) => f.includes('test') || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([]);
    const manifest = JSON.parse(
      readFileSync(join(scratch, 'node_modules/@keys-usage-identity/client/package.json'), 'utf8'),
    ) as { version: string; dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies)).toEqual(['openapi-fetch']);
    expect(manifest.version).toBe(
      (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version,
    );
  });

  it('type-checks a consumer against the packed declarations, then mints, lists and revokes a key from it', async () => {
    expect(typecheck).toBe('');
    const w = await t.seed.world('owner');
    // Asynchronously: the service answers from this very process.
    const run = await promisify(execFile)(process.execPath, [join(scratch, 'main.js')], {
      cwd: scratch,
      timeout: 60_000,
      env: { ...process.env, BASE_URL: t.url, SESSION: w.session, ORG_ID: w.orgId },
    });
    const out = JSON.parse(run.stdout) as {
      id: string;
      listed: string[];
      after: number;
      version: string;
    };
    expect(out.listed).toEqual([out.id]);
    expect(out.after).toBe(401);
    expect(out.version).toMatch(/^\d{4}-\d\d-\d\d$/);
    const { rows } = await t.db.pool.query(`SELECT name, revoked_at FROM api_keys WHERE id = $1`, [out.id]);
    expect(rows).toEqual([{ name: 'from the scratch project', revoked_at: expect.any(Date) }]);
  });
});
