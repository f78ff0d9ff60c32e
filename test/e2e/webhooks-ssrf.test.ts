import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundGuard, type Resolver } from '../../src/webhooks/outbound-guard.js';
import { WebhookSender } from '../../src/webhooks/webhook-sender.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=';

/**
 * Outbound safety at send time. Resolution is stubbed: nothing here ever sends traffic to a
 * non-loopback address, and a refused destination is refused before any connection (the only
 * listening socket, on 127.0.0.1, counts what reaches it).
 */
describe('webhook sender: outbound safety', () => {
  const receiver = new WebhookReceiver();
  let port: string;
  const looked: string[] = [];
  const resolver: Resolver = async (host, timeoutMs) => {
    if (host === 'silent.example')
      return new Promise((_, reject) =>
        setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' })), timeoutMs),
      );
    looked.push(host);
    const table: Record<string, string> = {
      'internal.example': '10.20.30.40',
      'loopback.example': '127.0.0.1',
      'metadata.example': '169.254.169.254',
    };
    return table[host] ? [{ address: table[host], family: 4 }] : [];
  };
  // Every port is allowed here except where a test says otherwise: the receivers listen on ephemeral ports.
  const ANY_PORT: Array<[number, number]> = [[1, 65535]];
  const guard = (allowCidrs: string[], allowedPorts = ANY_PORT) =>
    new OutboundGuard({ allowCidrs, allowedPorts, resolver });
  const sender = (allow: string[], httpsOnly = false) =>
    new WebhookSender({ guard: guard(allow), timeoutMs: 2000, httpsOnly });
  const message = { id: 'msg_1', body: '{"type":"webhook.test","timestamp":"2026-01-01T00:00:00.000Z","data":{}}' };

  beforeAll(async () => {
    port = new URL(await receiver.start()).port;
    receiver.secret = SECRET;
  });
  afterAll(() => receiver.stop());

  it.each([
    ['loopback, by address', () => `http://127.0.0.1:${port}/hook`],
    ['loopback, by a name resolving to it', () => `http://loopback.example:${port}/hook`],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data/'],
    ['a name resolving to the metadata address', () => 'http://metadata.example/latest/meta-data/'],
    ['a name resolving to 10.x', () => 'http://internal.example/hook'],
    ['IPv6 loopback', () => `http://[::1]:${port}/hook`],
    ['IPv4-compatible IPv6 loopback', () => `http://[::127.0.0.1]:${port}/hook`],
    ['IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port}/hook`],
  ])('refuses %s, before connecting, without naming the address', async (_label, url) => {
    const result = await sender([]).send(url(), [SECRET], message);
    expect(result).toMatchObject({ ok: false, status: null, error: 'refused: private or reserved address' });
    expect(receiver.received).toEqual([]);
  });

  it('refuses a port outside WEBHOOK_ALLOWED_PORTS even inside an allowed CIDR, before connecting', async () => {
    const only443 = new WebhookSender({
      guard: guard(['127.0.0.1/32'], [[443, 443]]),
      timeoutMs: 2000,
      httpsOnly: false,
    });
    const result = await only443.send(`http://127.0.0.1:${port}/hook`, [SECRET], message);
    expect(result).toMatchObject({ ok: false, status: null, error: 'refused: port not allowed' });
    expect(receiver.received).toEqual([]);
    const ranged = new WebhookSender({
      guard: guard(
        ['127.0.0.1/32'],
        [
          [443, 443],
          [Number(port), Number(port)],
        ],
      ),
      timeoutMs: 2000,
      httpsOnly: false,
    });
    expect(await ranged.send(`http://127.0.0.1:${port}/hook`, [SECRET], message)).toMatchObject({
      ok: true,
      status: 200,
    });
    receiver.received.length = 0;
  });

  it('bounds name resolution by the attempt deadline: a name server that never answers fails the attempt in time', async () => {
    const quick = new WebhookSender({ guard: guard([]), timeoutMs: 300, httpsOnly: false });
    const started = Date.now();
    const result = await quick.send(`http://silent.example:${port}/hook`, [SECRET], message);
    expect(result).toMatchObject({ ok: false, status: null, error: 'refused: the host name does not resolve' });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('refuses plain http in production', async () => {
    const result = await sender(['127.0.0.1/32'], true).send(`http://127.0.0.1:${port}/hook`, [SECRET], message);
    expect(result.error).toBe('only https URLs are delivered to');
    expect(receiver.received).toEqual([]);
  });

  it('delivers where the allow-list permits, connecting to the address it checked (not a second lookup)', async () => {
    // `loopback.example` exists only in the stubbed resolver: reaching the receiver proves the
    // connection used the checked address rather than resolving the name again.
    const result = await sender(['127.0.0.1/32']).send(`http://loopback.example:${port}/hook`, [SECRET], message);
    expect(result).toMatchObject({ ok: true, status: 200, error: null, body: 'ok from the receiver' });
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0].verified).toEqual(JSON.parse(message.body));
    expect(receiver.received[0].headers['webhook-id']).toBe('msg_1');
  });

  it('does not follow redirects, and keeps at most 1 KB of the answer', async () => {
    const { createServer } = await import('node:http');
    const server = createServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://127.0.0.1:${port}/hook` }).end();
      } else {
        res.writeHead(500).end('x'.repeat(10_000));
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const p = (server.address() as { port: number }).port;
    const before = receiver.received.length;
    try {
      const redirected = await sender(['127.0.0.1/32']).send(`http://127.0.0.1:${p}/redirect`, [SECRET], message);
      expect(redirected).toMatchObject({ ok: false, status: 302 });
      expect(receiver.received.length).toBe(before);
      const big = await sender(['127.0.0.1/32']).send(`http://127.0.0.1:${p}/big`, [SECRET], message);
      expect(big).toMatchObject({ ok: false, status: 500 });
      expect(big.body).toHaveLength(1024);
    } finally {
      server.close();
    }
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    const { createServer } = await import('node:http');
    const server = createServer(() => undefined); // never answers
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const p = (server.address() as { port: number }).port;
    try {
      const quick = new WebhookSender({ guard: guard(['127.0.0.1/32']), timeoutMs: 300, httpsOnly: false });
      const result = await quick.send(`http://127.0.0.1:${p}/slow`, [SECRET], message);
      expect(result).toMatchObject({ ok: false, status: null, error: 'no answer within 300 ms' });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
