import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caresResolver, OutboundGuard, RefusedDestinationError, type Resolver } from './outbound-guard.js';

const resolverOf =
  (table: Record<string, string[]>): Resolver =>
  async (host) =>
    (table[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('OutboundGuard', () => {
  const guard = new OutboundGuard({
    allowCidrs: [],
    allowedPorts: [
      [443, 443],
      [80, 80],
    ],
    resolver: resolverOf({
      'internal.example': ['10.1.2.3'],
      'mixed.example': ['93.184.216.34', '127.0.0.1'],
      'public.example': ['93.184.216.34'],
      'v6local.example': ['fd00::1'],
      'nat64.example': ['64:ff9b:1::a00:1'],
    }),
  });

  it.each([
    ['127.0.0.1'],
    ['127.5.6.7'],
    ['10.0.0.1'],
    ['172.16.0.1'],
    ['192.168.1.1'],
    ['169.254.169.254'],
    ['100.64.0.1'],
    ['0.0.0.0'],
    ['224.0.0.1'],
    ['::1'],
    ['fe80::1'],
    ['fc00::1'],
    ['fd00:ec2::254'],
    ['::ffff:127.0.0.1'],
    ['::ffff:169.254.169.254'],
    ['::ffff:7f00:1'],
    // IPv4-compatible (::/96), local-use NAT64 (64:ff9b:1::/48), 6to4 (2002::/16), old site-local (fec0::/10).
    ['::127.0.0.1'],
    ['::7f00:1'],
    ['::a9fe:a9fe'],
    ['64:ff9b:1::7f00:1'],
    ['64:ff9b::a00:1'],
    ['2002:7f00:1::1'],
    ['2002:c0a8:101::'],
    ['fec0::1'],
    ['feff::1'],
  ])('refuses %s', (address) => {
    expect(guard.permits(address)).toBe(false);
  });

  it.each([['93.184.216.34'], ['8.8.8.8'], ['2606:4700:4700::1111'], ['2001:4860:4860::8888']])(
    'permits the public address %s',
    (address) => {
      expect(guard.permits(address)).toBe(true);
    },
  );

  it('refuses a name that resolves to a private address, and a name with any private address among its answers, without naming it', async () => {
    await expect(guard.resolve('internal.example', 1000)).rejects.toBeInstanceOf(RefusedDestinationError);
    const refusal = await guard.resolve('mixed.example', 1000).catch((e: Error) => e);
    expect(refusal).toBeInstanceOf(RefusedDestinationError);
    expect((refusal as Error).message).toBe('private or reserved address');
    await expect(guard.resolve('v6local.example', 1000)).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(guard.resolve('nat64.example', 1000)).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(guard.resolve('169.254.169.254', 1000)).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(guard.resolve('[::1]', 1000)).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(guard.resolve('[::7f00:1]', 1000)).rejects.toBeInstanceOf(RefusedDestinationError);
  });

  it('returns the checked address of a public name (the one the connection is pinned to)', async () => {
    await expect(guard.resolve('public.example', 1000)).resolves.toEqual({ address: '93.184.216.34', family: 4 });
  });

  it('lets the allow-list open exactly the ranges it names', () => {
    const allowing = new OutboundGuard({ allowCidrs: ['127.0.0.1/32', '10.9.0.0/16'], allowedPorts: [[443, 443]] });
    expect(allowing.permits('127.0.0.1')).toBe(true);
    expect(allowing.permits('127.0.0.2')).toBe(false);
    expect(allowing.permits('10.9.1.1')).toBe(true);
    expect(allowing.permits('10.8.1.1')).toBe(false);
    expect(allowing.permits('169.254.169.254')).toBe(false);
  });

  it('permits only the allowed ports, a URL without one by its scheme default', () => {
    expect(guard.permitsPort(new URL('https://public.example/hook'))).toBe(true);
    expect(guard.permitsPort(new URL('http://public.example/hook'))).toBe(true);
    expect(guard.permitsPort(new URL('https://public.example:8443/hook'))).toBe(false);
    expect(guard.permitsPort(new URL('http://public.example:5432/'))).toBe(false);
    const ranged = new OutboundGuard({ allowCidrs: [], allowedPorts: [[8000, 8099]] });
    expect(ranged.permitsPort(new URL('https://public.example:8050/'))).toBe(true);
    expect(ranged.permitsPort(new URL('https://public.example/'))).toBe(false);
  });
});

describe('caresResolver', () => {
  // A name server on loopback that reads every query and never answers.
  let silent: Socket;
  let server: string;
  beforeAll(async () => {
    silent = createSocket('udp4');
    silent.on('message', () => undefined);
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    server = `127.0.0.1:${silent.address().port}`;
  });
  afterAll(() => silent.close());

  it('gives up on a name server that never answers within the time it is given', async () => {
    const started = performance.now();
    await expect(caresResolver([server])('hook.example', 300)).rejects.toMatchObject({
      // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types asymmetric matchers as `any`
      code: expect.stringMatching(/^E(CANCELLED|TIMEOUT)$/),
    });
    expect(performance.now() - started).toBeLessThan(900);
  });

  it('refuses a name it could not resolve in time through the guard (no address to judge)', async () => {
    const guard = new OutboundGuard({ allowCidrs: [], allowedPorts: [[443, 443]], resolver: caresResolver([server]) });
    await expect(guard.resolve('hook.example', 200)).rejects.toThrow();
  });
});
