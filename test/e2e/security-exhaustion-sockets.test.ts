import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultMaxConnections } from '../../src/http/socket-limits.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: sockets that never read or never finish a request: the server lets them go and keeps serving.
 */

/** How long the server may take to let go of stalled sockets on a busy machine. */
const LET_GO = { timeout: 15_000, interval: 50 };

function connections(t: TestApp): Promise<number> {
  return new Promise((resolve, reject) =>
    t.app.getHttpServer().getConnections((error, n) => (error ? reject(error) : resolve(n))),
  );
}

/** Opens `count` loopback sockets that send `bytes` and never read a byte of the answer. */
async function stalledClients(url: string, count: number, bytes: string): Promise<net.Socket[]> {
  const { port } = new URL(url);
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Socket>((resolve) => {
          const s = net.connect({ port: Number(port), host: '127.0.0.1' }, () => {
            s.pause();
            s.write(bytes);
            resolve(s);
          });
          s.on('error', () => resolve(s));
        }),
    ),
  );
  return sockets;
}

describe('sockets are let go', () => {
  let t: TestApp;
  const held: net.Socket[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        HTTP_HEADERS_TIMEOUT_MS: '1500',
        HTTP_REQUEST_TIMEOUT_MS: '2000',
        HTTP_IDLE_TIMEOUT_MS: '2000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
      },
    });
  });
  afterAll(async () => {
    for (const s of held) s.destroy();
    await t?.close();
  });

  it('serves a normal client while 300 clients never read, then destroys their sockets after the timeouts', async () => {
    let accepted = 0;
    t.app.getHttpServer().on('connection', () => accepted++);
    const bigAnswer = `GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(20); // pipelined: more than the buffers hold
    held.push(...(await stalledClients(t.url, 100, bigAnswer)));
    held.push(...(await stalledClients(t.url, 100, 'GET /health/live HTTP/1.1\r\nHost: x\r\n'))); // headers never end
    held.push(
      ...(await stalledClients(
        t.url,
        100,
        'POST /api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      )),
    ); // body never ends
    await expect.poll(() => accepted, { ...LET_GO, message: 'connections accepted' }).toBeGreaterThanOrEqual(300);

    const normal = await t.api.get('/health/live');
    expect(normal.status).toBe(200);

    // Destroyed, not half-closed: the server's own count of open sockets falls to (nearly) none
    // although not one of the 300 peers has closed its end.
    await expect
      .poll(() => connections(t), { ...LET_GO, message: 'connections still open after the timeouts' })
      .toBeLessThanOrEqual(2);
  });

  it('drops connections beyond HTTP_MAX_CONNECTIONS at accept and serves again once the stalled ones are gone', async () => {
    const capped = await startTestApp({
      db: t.db,
      env: {
        HTTP_MAX_CONNECTIONS: '20',
        HTTP_HEADERS_TIMEOUT_MS: '500',
        HTTP_REQUEST_TIMEOUT_MS: '800',
        HTTP_IDLE_TIMEOUT_MS: '1000',
      },
    });
    try {
      expect(capped.app.getHttpServer().maxConnections).toBe(20);
      const sockets = await stalledClients(capped.url, 60, 'GET /health/live HTTP/1.1\r\nHost: x\r\n');
      held.push(...sockets);
      expect(await connections(capped)).toBeLessThanOrEqual(20);
      await expect.poll(() => connections(capped), LET_GO).toBe(0);
      expect((await capped.api.get('/health/live')).status).toBe(200);
    } finally {
      await capped.close();
    }
  });

  it('defaults the connection cap below the descriptor limit', () => {
    expect(t.app.getHttpServer().maxConnections).toBe(defaultMaxConnections());
    const dir = mkdtempSync(join(tmpdir(), 'limits-'));
    const file = join(dir, 'limits');
    writeFileSync(
      file,
      'Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n',
    );
    expect(defaultMaxConnections(file)).toBe(768);
    expect(defaultMaxConnections(join(dir, 'missing'))).toBe(4096);
  });
});
