import { describe, expect, it } from 'vitest';
import { OutboundGuard, RefusedDestinationError, type Resolver } from './outbound-guard.js';

const resolverOf = (table: Record<string, string[]>): Resolver => async (host) =>
  (table[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('OutboundGuard', () => {
  const guard = new OutboundGuard([], resolverOf({
    'internal.example': ['10.1.2.3'],
    'mixed.example': ['93.184.216.34', '127.0.0.1'],
    'public.example': ['93.184.216.34'],
    'v6local.example': ['fd00::1'],
  }));

  it.each([
    ['127.0.0.1'], ['127.5.6.7'], ['10.0.0.1'], ['172.16.0.1'], ['192.168.1.1'], ['169.254.169.254'], ['100.64.0.1'],
    ['0.0.0.0'], ['224.0.0.1'], ['::1'], ['fe80::1'], ['fc00::1'], ['fd00:ec2::254'], ['::ffff:127.0.0.1'], ['::ffff:169.254.169.254'],
  ])('refuses %s', (address) => {
    expect(guard.permits(address)).toBe(false);
  });

  it.each([['93.184.216.34'], ['8.8.8.8'], ['2606:4700:4700::1111']])('permits the public address %s', (address) => {
    expect(guard.permits(address)).toBe(true);
  });

  it('refuses a name that resolves to a private address, and a name with any private address among its answers', async () => {
    await expect(guard.resolve('internal.example')).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(guard.resolve('mixed.example')).rejects.toThrow(/127\.0\.0\.1/);
    await expect(guard.resolve('v6local.example')).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(guard.resolve('169.254.169.254')).rejects.toBeInstanceOf(RefusedDestinationError);
    await expect(guard.resolve('[::1]')).rejects.toBeInstanceOf(RefusedDestinationError);
  });

  it('returns the checked address of a public name (the one the connection is pinned to)', async () => {
    await expect(guard.resolve('public.example')).resolves.toEqual({ address: '93.184.216.34', family: 4 });
  });

  it('lets the allow-list open exactly the ranges it names', () => {
    const allowing = new OutboundGuard(['127.0.0.1/32', '10.9.0.0/16']);
    expect(allowing.permits('127.0.0.1')).toBe(true);
    expect(allowing.permits('127.0.0.2')).toBe(false);
    expect(allowing.permits('10.9.1.1')).toBe(true);
    expect(allowing.permits('10.8.1.1')).toBe(false);
    expect(allowing.permits('169.254.169.254')).toBe(false);
  });
});
