import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { childEnv, freePort, ROOT } from '../support/processes.js';
import { TEST_SESSION_SECRET } from '../support/seed.js';

/**
 * Start-up against a database that cannot work: the built server and CLI say why in one line
 * and exit at once, retrying only what can heal. The bound below is generous (the issue asks for
 * 2 s; a loaded CI machine must not make this flaky): what it proves is "no retry loop".
 */
const BOUND_MS = 10_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  killed: boolean;
}

function run(script: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, [resolve(ROOT, script), ...args], { cwd: ROOT, env: childEnv(env) });
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, BOUND_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      ok({ code, stdout, stderr, killed });
    });
  });
}

function withDatabase(name: string, user?: { name: string; password: string }): string {
  const u = new URL(inject('dbAdminUrl'));
  u.pathname = `/${name}`;
  if (user) {
    u.username = user.name;
    u.password = user.password;
  }
  return u.toString();
}

const PASSWORD = 'never-shown-7f3a9c';

const base = {
  NODE_ENV: 'production',
  SESSION_JWT_SECRET: TEST_SESSION_SECRET,
  LOG_LEVEL: 'info',
  PORT: '0',
  HOST: '127.0.0.1',
};

const PERMANENT: [string, () => string, RegExp][] = [
  [
    'a database that does not exist (3D000)',
    () => withDatabase('kui_no_such_database'),
    /the database does not exist.*\[3D000\]/,
  ],
  [
    'a user the server refuses (28P01 / 28000)',
    () => withDatabase('postgres', { name: 'kui_no_such_role', password: PASSWORD }),
    /(authentication failed|refused this user).*\[28(P01|000)\]/,
  ],
  ['a malformed URL', () => 'postgres://postgres@127.0.0.1:99999/x', /DATABASE_URL.*not a valid URL/],
];

describe('failing fast on a database that cannot work', () => {
  it.each(PERMANENT)('the server, given %s, exits 1 with one line and no retry', async (_, url, message) => {
    const res = await run('dist/main.js', [], { ...base, DATABASE_URL: url() });
    expect(res.killed, 'still running: it retried').toBe(false);
    expect(res.code).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines, res.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^Failed to start: /);
    expect(lines[0]).toMatch(message);
    expect(res.stderr).not.toContain(PASSWORD); // the password never reaches the message
    expect(res.stdout + res.stderr).not.toMatch(/retrying/i);
  });

  it.each(PERMANENT)('the CLI, given %s, exits 1 with one line and no retry', async (_, url, message) => {
    const res = await run('dist/cli/admin.js', ['org', 'create', '--name', 'x'], { ...base, DATABASE_URL: url() });
    expect(res.killed, 'still running: it retried').toBe(false);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    const lines = res.stderr.trim().split('\n');
    expect(lines, res.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^error: /);
    expect(lines[0]).toMatch(message);
    expect(res.stderr).not.toMatch(/retrying/i);
  });

  it('retries a refused connection (it can heal), saying how long it waits, and then gives up', async () => {
    const closed = await freePort();
    const res = await run('dist/cli/admin.js', ['org', 'create', '--name', 'x'], {
      ...base,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/x`,
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/ECONNREFUSED.*retrying in \d+ ms \(attempt 2 of \d+\)/);
    expect(res.stderr.trim().split('\n').at(-1)).toMatch(
      /^error: Cannot connect to the database .*\(gave up after \d+ attempts\)$/,
    );
  });

  it('the server logs each retry of a refused connection with its delay', async () => {
    const closed = await freePort();
    const child = spawn(process.execPath, [resolve(ROOT, 'dist/main.js')], {
      cwd: ROOT,
      env: childEnv({ ...base, DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/x` }),
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    await expect.poll(() => out, { timeout: 8_000 }).toMatch(/retrying in \d+ ms/);
    const exited = new Promise((ok) => child.once('exit', ok));
    child.kill('SIGTERM');
    await exited;
    const line = JSON.parse(out.split('\n').find((l) => l.includes('retrying'))!);
    expect(line).toMatchObject({
      level: 'warn',
      msg: expect.stringMatching(
        /not reachable: connect ECONNREFUSED.*\[ECONNREFUSED\]; retrying in 500 ms \(attempt 2 of \d+\)/,
      ),
    });
  });
});

describe("failing fast on session settings that would accept another application's tokens", () => {
  it('the server, in production with a JWKS URL but no audience or issuer, or over http, exits 1 naming each variable', async () => {
    const res = await run('dist/main.js', [], {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: withDatabase('kui_never_reached'),
      SESSION_JWT_JWKS_URI: 'http://127.0.0.1:9/jwks.json',
    });
    expect(res.killed, 'still running').toBe(false);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/SESSION_JWT_AUDIENCE: required in production/);
    expect(res.stderr).toMatch(/SESSION_JWT_ISSUER: required in production/);
    expect(res.stderr).toMatch(/SESSION_JWT_JWKS_URI: must be an https:\/\/ URL in production/);
    expect(res.stdout).not.toMatch(/listening/i);
  });
});
