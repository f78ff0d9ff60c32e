import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startServer as startBuiltServer } from '../support/processes.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * The built server (`node dist/main.js`, NODE_ENV=production; `npm test` builds dist/ first) is
 * sent SIGTERM while requests are in flight. Its database sits behind a TCP proxy that slows
 * every byte down, so "in flight" lasts long enough to observe, and that sees whether each
 * connection was closed cleanly (a pool that ends sends PostgreSQL's Terminate message; a
 * process that just dies does not).
 */
const LATENCY_MS = 600;

interface Server {
  proc: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

async function startServer(databaseUrl: string, env: Record<string, string> = {}): Promise<Server> {
  const server = await startBuiltServer({
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    DB_MIGRATE: 'false',
    DB_POOL_MAX: '4',
    // This test counts the pool's connections through a proxy slowed to 600 ms a chunk; the
    // verification cache's LISTEN connection reconnecting at that pace would blur the count
    // (its release at shutdown is tested in verification-cache.test.ts).
    VERIFICATION_CACHE: 'false',
    SESSION_JWT_SECRET: TEST_SESSION_SECRET,
    API_KEY_SECRET: TEST_API_KEY_SECRET,
    ...env,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((r) =>
    server.child.on('exit', (code, signal) => r({ code, signal, at: performance.now() })),
  );
  return { proc: server.child, port: Number(new URL(server.url).port), output: server.output, exited };
}

/** A request on a connection of its own (no keep-alive pool), so a refused connection shows as such. */
function get(port: number, path: string, token: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolvePromise, reject) => {
    const headers = token ? { authorization: `Bearer ${token}` } : {};
    const req = http.request({ host: '127.0.0.1', port, path, agent: false, headers }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

const post = (port: number, token: string, body: unknown) =>
  fetch(`http://127.0.0.1:${port}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { key: string; id: string } }));

describe('graceful shutdown of the built server on SIGTERM', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let seed: Seeder;

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await TcpProxy.start(db.url);
    seed = new Seeder(db.pool);
  });
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  it('stops accepting, finishes the requests in flight, writes their last use, closes the pool and exits', async () => {
    const server = await startServer(proxy.urlFor(db.url));
    try {
      const w = await seed.world('owner');
      const first = await post(server.port, w.session, { org_id: w.orgId, name: 'first' });
      const second = await post(server.port, w.session, { org_id: w.orgId, name: 'second' });
      expect([first.status, second.status]).toEqual([201, 201]);
      // Open every pool connection now: through the slowed proxy a new one would take seconds.
      await Promise.all(Array.from({ length: 8 }, () => get(server.port, '/me', w.session)));

      proxy.latencyMs = LATENCY_MS;
      let queries = 0;
      proxy.onClientData = () => queries++;
      const inFlight: Array<Promise<{ status: number; body: unknown }>> = [];
      // Two first uses, a little apart: the second key's last-used write queues behind the first's.
      inFlight.push(get(server.port, '/me', first.body.key));
      while (queries === 0) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, LATENCY_MS / 2));
      const seen = queries;
      inFlight.push(get(server.port, '/me', second.body.key));
      while (queries === seen) await new Promise((r) => setTimeout(r, 5));

      const signalledAt = performance.now();
      server.proc.kill('SIGTERM');
      let settled = 0;
      const answers = inFlight.map((p) => p.finally(() => settled++));

      // New connections are refused while the in-flight requests are still being answered
      // (probes without a credential: answered at once, with no database round trip).
      let refused = false;
      while (!refused && settled < inFlight.length) {
        try {
          await get(server.port, '/me', '');
        } catch (error) {
          refused = (error as NodeJS.ErrnoException).code === 'ECONNREFUSED';
        }
        if (!refused) await new Promise((r) => setTimeout(r, 20));
      }
      expect(refused, 'a new connection was refused before the in-flight requests were answered').toBe(true);

      const results = await Promise.all(answers);
      expect(results.map((r) => r.status)).toEqual([200, 200]);
      expect(results.map((r) => (r.body as { user_id: string }).user_id)).toEqual([w.userId, w.userId]);

      const exit = await server.exited;
      expect(exit.code === 0 || exit.signal === 'SIGTERM', `exit ${JSON.stringify(exit)}\n${server.output()}`).toBe(
        true,
      );
      expect(exit.at - signalledAt, 'exited within 10 s of SIGTERM').toBeLessThan(10_000);

      proxy.latencyMs = 0;
      const { rows } = await db.pool.query<{ name: string; last_used_at: Date | null }>(
        'SELECT name, last_used_at FROM api_keys WHERE id = ANY($1) ORDER BY name',
        [[first.body.id, second.body.id]],
      );
      expect(rows.map((r) => [r.name, r.last_used_at instanceof Date])).toEqual([
        ['first', true],
        ['second', true],
      ]);

      await new Promise((r) => setTimeout(r, 100));
      expect(proxy.connections, 'no database connection left open').toBe(0);
      expect(proxy.closed.terminated, 'every pool connection was ended with a Terminate message').toBe(
        proxy.closed.total,
      );
      expect(server.output()).not.toMatch(/error/i);
    } finally {
      proxy.latencyMs = 0;
      proxy.onClientData = null;
      server.proc.kill('SIGKILL');
    }
  });

  it('does not wait for a connection that never sent a request', async () => {
    // A browser's preconnect or a probe: without its release the close would wait for the idle
    // timeout (30 s), and the shutdown deadline would end the process with exit code 1.
    const server = await startServer(db.url);
    try {
      const socket = net.connect(server.port, '127.0.0.1');
      await new Promise<void>((r, reject) => socket.once('connect', () => r()).once('error', reject));
      const closedByServer = new Promise<void>((r) => socket.once('close', () => r()));
      socket.on('error', () => undefined);
      server.proc.kill('SIGTERM');
      const exit = await server.exited;
      expect(exit.code === 0 || exit.signal === 'SIGTERM', `exit ${JSON.stringify(exit)}\n${server.output()}`).toBe(
        true,
      );
      expect(server.output()).not.toContain('Shutdown took longer');
      await closedByServer;
    } finally {
      server.proc.kill('SIGKILL');
    }
  });

  it('still exits within 10 s when a request waits on a database that stopped answering, however long its timeouts', async () => {
    // With a one-minute statement timeout the in-flight request would hold the shutdown for a minute.
    const server = await startServer(proxy.urlFor(db.url), { DB_STATEMENT_TIMEOUT_MS: '60000' });
    try {
      const w = await seed.world('owner');
      const minted = await post(server.port, w.session, { org_id: w.orgId });
      expect(minted.status).toBe(201);
      proxy.blackhole();
      let ended = false;
      const stuck = get(server.port, '/me', minted.body.key).then(
        () => (ended = true),
        () => (ended = true),
      );
      await new Promise((r) => setTimeout(r, 200));

      const signalledAt = performance.now();
      server.proc.kill('SIGTERM');
      const exit = await server.exited;
      expect(exit.at - signalledAt, `exited within 10 s of SIGTERM\n${server.output()}`).toBeLessThan(10_000);
      expect(exit.code, 'a forced exit says so').toBe(1);
      expect(server.output()).toContain('Shutdown took longer than');
      await stuck;
      expect(ended).toBe(true);
    } finally {
      await proxy.restore();
      server.proc.kill('SIGKILL');
    }
  });
});
