import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where a webhook may be sent. Every address a name resolves to is checked at send time, and the
 * connection goes to the checked address (the http `lookup` hook below), so a name that resolves
 * to a public address when checked and to 127.0.0.1 when connecting (DNS rebinding) cannot reach
 * inside. Private, loopback, link-local (cloud metadata 169.254.169.254 included), CGNAT,
 * multicast and reserved ranges are refused unless WEBHOOK_ALLOW_CIDRS lists them.
 */
const REFUSED_V4 = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const;
const REFUSED_V6 = [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const;

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export class RefusedDestinationError extends Error {}

export class OutboundGuard {
  private readonly refused = new BlockList();
  private readonly allowed = new BlockList();

  constructor(allowCidrs: string[], private readonly resolver: Resolver = systemResolver) {
    for (const [net, prefix] of REFUSED_V4) this.refused.addSubnet(net, prefix, 'ipv4');
    for (const [net, prefix] of REFUSED_V6) this.refused.addSubnet(net, prefix, 'ipv6');
    for (const cidr of allowCidrs) {
      const [net, bits] = cidr.split('/');
      const family = isIP(net) === 6 ? 'ipv6' : 'ipv4';
      this.allowed.addSubnet(net, bits === undefined ? (family === 'ipv6' ? 128 : 32) : Number(bits), family);
    }
  }

  /** Whether an address may be connected to. IPv4-mapped IPv6 addresses are judged as IPv4. */
  permits(address: string): boolean {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    const ip = mapped ? mapped[1] : address;
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowed.check(ip, family)) return true;
    return !this.refused.check(ip, family);
  }

  /** Resolves a host and returns the first permitted address; refuses if any address is not permitted. */
  async resolve(hostname: string): Promise<{ address: string; family: number }> {
    const bare = hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await this.resolver(bare);
    if (addresses.length === 0) throw new RefusedDestinationError(`${hostname} does not resolve`);
    // One bad address refuses the name: the connection must not be able to land on it.
    const bad = addresses.find((a) => !this.permits(a.address));
    if (bad) throw new RefusedDestinationError(`${hostname} resolves to a refused address (${bad.address})`);
    return addresses[0];
  }
}
