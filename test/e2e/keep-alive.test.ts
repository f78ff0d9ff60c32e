import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { loadEnvironment } from '../../src/config/app-config.js';
import { startTestApp } from '../support/test-app.js';

/** A keep-alive client on one socket: each request waits for its whole answer; `closed` says when the server hung up. */
function keepAliveClient(url: string) {
  const u = new URL(url);
  const socket = net.connect(Number(u.port), u.hostname);
  let received = '';
  let closedAt: number | null = null;
  socket.on('data', (d) => (received += d.toString('latin1')));
  socket.on('close', () => (closedAt = Date.now()));
  socket.on('error', () => {});
  return {
    get closedAt() {
      return closedAt;
    },
    async get(path: string): Promise<string> {
      received = '';
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`);
      await expect
        .poll(() => received.includes('\r\n\r\n') && /content-length: (\d+)/i.test(received) && received.endsWith('}'))
        .toBe(true);
      return received.split('\r\n')[0];
    },
    destroy: () => socket.destroy(),
  };
}

describe('idle keep-alive connections behind a load balancer', () => {
  it('are kept 72 s by default, longer than the 60 s a typical balancer keeps its idle connections and reuses them', async () => {
    expect(loadEnvironment({}).HTTP_KEEP_ALIVE_TIMEOUT_MS).toBe(72_000);
    const t = await startTestApp();
    try {
      expect(t.app.getHttpServer().keepAliveTimeout).toBe(72_000);
      expect(t.app.getHttpServer().keepAliveTimeout).toBeGreaterThan(60_000);
    } finally {
      await t.close();
    }
  });

  it('stay open for HTTP_KEEP_ALIVE_TIMEOUT_MS, beyond the shorter idle-socket timeout, and serve the next request on the same connection', async () => {
    const t = await startTestApp({ env: { HTTP_KEEP_ALIVE_TIMEOUT_MS: '2500', HTTP_IDLE_TIMEOUT_MS: '500' } });
    const client = keepAliveClient(t.url);
    try {
      expect(await client.get('/health/live')).toBe('HTTP/1.1 200 OK');
      const idleFrom = Date.now();
      await new Promise((r) => setTimeout(r, 1500));
      expect(client.closedAt, 'closed while idle, before the keep-alive timeout').toBeNull();
      expect(await client.get('/health/live')).toBe('HTTP/1.1 200 OK');
      // ...and closed by the server once idle for the keep-alive timeout (Node adds a second's grace).
      const secondIdleFrom = Date.now();
      await expect.poll(() => client.closedAt, { timeout: 6000, interval: 100 }).not.toBeNull();
      expect(client.closedAt! - secondIdleFrom).toBeGreaterThanOrEqual(2400);
      expect(secondIdleFrom - idleFrom).toBeGreaterThanOrEqual(1500);
    } finally {
      client.destroy();
      await t.close();
    }
  });
});
