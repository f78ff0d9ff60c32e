import { Resolver as CaresResolver } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where a webhook may be sent. Every address a name resolves to is checked at send time, and the
 * connection goes to the checked address (the http `lookup` hook in webhook-sender.ts), so a name
 * that resolves to a public address when checked and to 127.0.0.1 when connecting (DNS
 * rebinding) cannot reach inside. Private, loopback, link-local (cloud metadata 169.254.169.254
 * included), CGNAT, multicast and reserved ranges are refused unless WEBHOOK_ALLOW_CIDRS lists
 * them, and only the ports of WEBHOOK_ALLOWED_PORTS are reached, whatever the address.
 */
const REFUSED_V4 = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const;
// ::/96 holds the unspecified and loopback addresses and the IPv4-compatible form (`[::127.0.0.1]`);
// NAT64 (both prefixes), 6to4 and the old site-local range all lead to an IPv4 or internal host.
const REFUSED_V6 = [
  ['::', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const;

/** The refusal as stored in the delivery and audit logs: never the address a name resolved to. */
export const REFUSED_ADDRESS = 'private or reserved address';
export const REFUSED_PORT = 'port not allowed';

export type Resolver = (hostname: string, timeoutMs: number) => Promise<Array<{ address: string; family: number }>>;

const NO_ANSWER = new Set(['ENODATA', 'ENOTFOUND', 'ENONAME']);

/**
 * A name's A and AAAA records from the system's name servers through c-ares, not `dns.lookup`:
 * no libuv thread-pool thread is held by a name server that never answers (the pool also resolves
 * the database's host), and the lookup is cancelled when the attempt's time is up.
 */
export const caresResolver =
  (servers?: string[]): Resolver =>
  async (hostname, timeoutMs) => {
    const resolver = new CaresResolver({ timeout: Math.max(1, Math.min(timeoutMs, 2_000)), tries: 2 });
    if (servers) resolver.setServers(servers);
    const timer = setTimeout(() => resolver.cancel(), timeoutMs);
    try {
      const answers = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
      const found = answers.flatMap((a, i) =>
        a.status === 'fulfilled' ? a.value.map((address) => ({ address, family: i === 0 ? 4 : 6 })) : [],
      );
      const failure = answers.find(
        (a): a is PromiseRejectedResult =>
          a.status === 'rejected' && !NO_ANSWER.has((a.reason as NodeJS.ErrnoException).code ?? ''),
      );
      // A timeout or a server failure on either family leaves the answer incomplete: refuse it rather than judge half.
      if (failure) throw failure.reason;
      return found;
    } finally {
      clearTimeout(timer);
    }
  };

export class RefusedDestinationError extends Error {}

export interface OutboundGuardOptions {
  /** CIDRs opened although private or reserved. */
  allowCidrs: string[];
  /** Port ranges a webhook may reach (inclusive). */
  allowedPorts: Array<[number, number]>;
  resolver?: Resolver;
}

export class OutboundGuard {
  private readonly refused = new BlockList();
  private readonly allowed = new BlockList();
  private readonly ports: Array<[number, number]>;
  private readonly resolver: Resolver;

  constructor(options: OutboundGuardOptions) {
    this.ports = options.allowedPorts;
    this.resolver = options.resolver ?? caresResolver();
    for (const [net, prefix] of REFUSED_V4) this.refused.addSubnet(net, prefix, 'ipv4');
    for (const [net, prefix] of REFUSED_V6) this.refused.addSubnet(net, prefix, 'ipv6');
    for (const cidr of options.allowCidrs) {
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

  /** Whether a URL's port (explicit, or its scheme's default) is one webhooks may reach. */
  permitsPort(url: URL): boolean {
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return this.ports.some(([from, to]) => port >= from && port <= to);
  }

  /**
   * Resolves a host within `timeoutMs` and returns the first address; refuses if any address is not
   * permitted. The refusal never names the address (an org admin must not map internal DNS).
   */
  async resolve(hostname: string, timeoutMs: number): Promise<{ address: string; family: number }> {
    const bare = hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await this.resolver(bare, timeoutMs);
    if (addresses.length === 0) throw new Error('no address');
    // One bad address refuses the name: the connection must not be able to land on it.
    if (addresses.some((a) => !this.permits(a.address))) throw new RefusedDestinationError(REFUSED_ADDRESS);
    return addresses[0];
  }
}
