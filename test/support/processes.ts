import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
const DIST = resolve(ROOT, 'dist');

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

let scratchDataDir: string | undefined;

/**
 * A DATA_DIR of this test worker's own for children that name none: in development the server
 * and the CLI keep generated secrets there, and a test must never write into the repository's .data.
 */
function defaultDataDir(): string {
  if (!scratchDataDir) {
    const dir = mkdtempSync(join(tmpdir(), 'kui-child-data-'));
    scratchDataDir = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return scratchDataDir;
}

/** The environment a child gets: the given variables only, plus PATH/HOME and a scratch DATA_DIR (nothing leaks in from the test runner). */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: defaultDataDir() };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json<T = any>(): T;
}

/** Runs the compiled operator CLI (`npm test` builds dist/ before the tests run). */
export function runCli(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, [resolve(DIST, 'cli/admin.js'), ...args], { cwd: ROOT, env: childEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => ok({ code, stdout, stderr, json: () => JSON.parse(stdout) }));
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts the compiled server and resolves once it says it is listening. */
export async function startServer(env: Record<string, string | undefined>, timeoutMs = 30_000): Promise<ServerProcess> {
  const port = Number(env.PORT ?? (await freePort()));
  const child = spawn(process.execPath, [resolve(DIST, 'main.js')], {
    cwd: ROOT,
    env: childEnv({ HOST: '127.0.0.1', ...env, PORT: String(port) }),
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // never leave a half-started server behind
      fail(new Error(`server did not start in time:\n${out}`));
    }, timeoutMs);
    const check = () => {
      if (/Listening on/.test(out)) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`server exited with ${code}:\n${out}`));
    });
  });
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    output: () => out,
    stop: (signal = 'SIGTERM') =>
      new Promise((ok) => {
        if (child.exitCode !== null) return ok(child.exitCode);
        child.once('exit', (code) => ok(code));
        child.kill(signal);
      }),
  };
}
