import { BlockList, isIP } from 'node:net';

/*
 * The per-key settings as the API states them (snake_case, as stored in the api_keys JSON
 * columns), the rules every one of them is checked against, and the refill calendar. Used by
 * the api-keys feature to validate a mint or a PATCH, and by the enforcement beside this file.
 */

import type { CreditRefill } from '../common/key-limits.js';
import type { RateWindow } from '../common/plan-rate-limits.js';

export type { CreditRefill, RateWindow };

export interface CreditsSetting {
  remaining: number;
  refill?: CreditRefill;
}

export const MAX_WINDOWS = 5;
export const MAX_WINDOW_SECONDS = 86_400;
export const MAX_CIDRS = 20;
export const MAX_METADATA_BYTES = 1024;
export const MAX_METADATA_DEPTH = 4;
/** Credits and limits are integers PostgreSQL and JavaScript agree on. */
export const MAX_AMOUNT = 1_000_000_000_000;
/**
 * The largest window limit that can be leased: a lease's ask (a share of the limit) and grant are
 * 32-bit integers in the lease statement, which serves many keys at once; a limit beyond it would
 * fail that statement for all of them, so it is a 400 at mint and PATCH instead.
 */
export const MAX_WINDOW_LIMIT = 1_000_000_000;
/** A window's name: what a route names as the window it counts against. */
export const WINDOW_NAME = /^[A-Za-z0-9_.:-]{1,32}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown, min: number, max: number): v is number =>
  Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
const onlyFields = (field: string, v: Record<string, unknown>, allowed: string[]): string | null => {
  const unknown = Object.keys(v).find((k) => !allowed.includes(k));
  return unknown === undefined ? null : `${field}.${unknown} is not an accepted field`;
};

/** Each check returns null when `value` is acceptable, else the 400's message naming the field and the rule. */
export function rateLimitsProblem(value: unknown, field = 'rate_limits'): string | null {
  if (!Array.isArray(value))
    return `${field} must be an array of at most ${MAX_WINDOWS} windows { name, limit, window_seconds }`;
  if (value.length > MAX_WINDOWS) return `${field} may hold at most ${MAX_WINDOWS} windows`;
  const names = new Set<string>();
  for (let i = 0; i < value.length; i++) {
    const w: unknown = value[i];
    const at = `${field}[${i}]`;
    if (!isObject(w)) return `${at} must be an object { name, limit, window_seconds }`;
    const extra = onlyFields(at, w, ['name', 'limit', 'window_seconds']);
    if (extra) return extra;
    if (typeof w.name !== 'string' || !WINDOW_NAME.test(w.name))
      return `${at}.name must be 1 to 32 letters, digits or _ . : -`;
    if (names.has(w.name)) return `${at}.name must be unique within ${field}`;
    names.add(w.name);
    if (!isCount(w.limit, 1, MAX_WINDOW_LIMIT)) return `${at}.limit must be an integer from 1 to ${MAX_WINDOW_LIMIT}`;
    if (!isCount(w.window_seconds, 1, MAX_WINDOW_SECONDS))
      return `${at}.window_seconds must be an integer from 1 to ${MAX_WINDOW_SECONDS} (one day)`;
  }
  return null;
}

export function creditsProblem(value: unknown, field = 'credits'): string | null {
  if (!isObject(value)) return `${field} must be an object { remaining, refill? }`;
  const extra = onlyFields(field, value, ['remaining', 'refill']);
  if (extra) return extra;
  if (!isCount(value.remaining, 0, MAX_AMOUNT)) return `${field}.remaining must be an integer from 0 to ${MAX_AMOUNT}`;
  if (value.refill === undefined) return null;
  const r = value.refill;
  if (!isObject(r)) return `${field}.refill must be an object { amount, interval, day_of_month? }`;
  const extraRefill = onlyFields(`${field}.refill`, r, ['amount', 'interval', 'day_of_month']);
  if (extraRefill) return extraRefill;
  if (r.interval !== 'daily' && r.interval !== 'monthly')
    return `${field}.refill.interval must be "daily" or "monthly"`;
  if (!isCount(r.amount, 1, MAX_AMOUNT)) return `${field}.refill.amount must be an integer from 1 to ${MAX_AMOUNT}`;
  if (r.day_of_month !== undefined) {
    if (r.interval !== 'monthly') return `${field}.refill.day_of_month applies to a monthly refill only`;
    if (!isCount(r.day_of_month, 1, 31)) return `${field}.refill.day_of_month must be an integer from 1 to 31`;
  }
  return null;
}

/**
 * IPv4 or IPv6 networks (a bare address is one host). A prefix shorter than /8 (IPv4) or /16
 * (IPv6) is refused as a likely mistake, except the explicit "everywhere" 0.0.0.0/0 and ::/0;
 * an address with host bits set under its prefix is refused (say the network's address).
 */
export function allowedCidrsProblem(value: unknown, field = 'allowed_cidrs'): string | null {
  if (!Array.isArray(value)) return `${field} must be an array of at most ${MAX_CIDRS} CIDRs`;
  if (value.length > MAX_CIDRS) return `${field} may hold at most ${MAX_CIDRS} CIDRs`;
  for (let i = 0; i < value.length; i++) {
    const parsed = typeof value[i] === 'string' ? parseCidr(value[i] as string) : null;
    if (typeof parsed === 'string' || parsed === null)
      return `${field}[${i}] ${parsed ?? 'must be an IPv4 or IPv6 CIDR such as 203.0.113.0/24'}`;
  }
  return null;
}

export function metadataProblem(value: unknown, field = 'metadata'): string | null {
  if (!isObject(value)) return `${field} must be a JSON object`;
  if (Buffer.byteLength(JSON.stringify(value), 'utf8') > MAX_METADATA_BYTES)
    return `${field} must be at most ${MAX_METADATA_BYTES} bytes as JSON`;
  if (depthOf(value) > MAX_METADATA_DEPTH) return `${field} must nest at most ${MAX_METADATA_DEPTH} levels deep`;
  if (!storableText(value))
    return `${field} must not contain NUL characters or unpaired surrogates (in keys or values)`;
  return null;
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one (code units, no u flag).
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** PostgreSQL's jsonb refuses \u0000 and text that is not well-formed UTF-16: no key or string may hold either. */
function storableText(v: unknown): boolean {
  const ok = (s: string) => !s.includes('\u0000') && !UNPAIRED_SURROGATE.test(s);
  if (typeof v === 'string') return ok(v);
  if (typeof v !== 'object' || v === null) return true;
  if (Array.isArray(v)) return v.every(storableText);
  return Object.entries(v).every(([k, child]) => ok(k) && storableText(child));
}

function depthOf(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  let deepest = 0;
  for (const child of Object.values(v)) deepest = Math.max(deepest, depthOf(child));
  return 1 + deepest;
}

interface Cidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** A parsed CIDR, or a string saying what is wrong with it. */
export function parseCidr(text: string): Cidr | string {
  // A zone id (fe80::1%eth0) names an interface, not a network: isIP accepts it, the mask arithmetic does not.
  if (text.includes('%')) return 'must not carry a zone id (%…): write the network without it';
  const [address, prefixText, ...rest] = text.split('/');
  const version = isIP(address ?? '');
  if (rest.length > 0 || version === 0) return 'must be an IPv4 or IPv6 CIDR such as 203.0.113.0/24';
  const bits = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? bits : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= bits)) return `must have a prefix length from 0 to ${bits}`;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (prefix > 0 && prefix < (version === 4 ? 8 : 16))
    return `is wider than /${version === 4 ? 8 : 16}: allow everywhere explicitly with ${version === 4 ? '0.0.0.0/0' : '::/0'}`;
  const probe = new BlockList();
  probe.addSubnet(address, prefix, family);
  // The network's own first address lies in it; an address with host bits set is not the network.
  if (
    !probe.check(networkAddress(address, prefix, version), family) ||
    networkAddress(address, prefix, version) !== normalise(address, version)
  ) {
    return `has host bits set: write the network address (for example ${networkAddress(address, prefix, version)}/${prefix})`;
  }
  return { address, prefix, family };
}

function toBigInt(address: string, version: number): bigint {
  if (version === 4) return address.split('.').reduce((n, part) => (n << 8n) + BigInt(Number(part)), 0n);
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const h = head ? head.split(':') : [];
  let t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  // An embedded IPv4 tail (::ffff:1.2.3.4) is two groups.
  const expand = (groups: string[]) => groups.flatMap((g) => (g.includes('.') ? ipv4Groups(g) : [g]));
  const hh = expand(h);
  t = expand(t);
  const groups = tail === undefined ? hh : [...hh, ...Array<string>(8 - hh.length - t.length).fill('0'), ...t];
  return groups.reduce((n, g) => (n << 16n) + BigInt(parseInt(g || '0', 16)), 0n);
}

function ipv4Groups(v4: string): string[] {
  const n = toBigInt(v4, 4);
  return [(n >> 16n).toString(16), (n & 0xffffn).toString(16)];
}

function fromBigInt(n: bigint, version: number): string {
  if (version === 4) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - i * 16)) & 0xffffn).toString(16));
  return compressV6(groups);
}

function compressV6(groups: string[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

function normalise(address: string, version: number): string {
  return fromBigInt(toBigInt(address, version), version);
}

function networkAddress(address: string, prefix: number, version: number): string {
  const bits = BigInt(version === 4 ? 32 : 128);
  const mask = prefix === 0 ? 0n : ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(prefix))) - 1n);
  return fromBigInt(toBigInt(address, version) & mask, version);
}

/** Whether every address of the network `inner` lies in the network `outer` (both valid CIDRs of one family). */
export function cidrWithin(inner: string, outer: string): boolean {
  const i = parseCidr(inner);
  const o = parseCidr(outer);
  if (typeof i === 'string' || typeof o === 'string' || i.family !== o.family || i.prefix < o.prefix) return false;
  const version = i.family === 'ipv4' ? 4 : 6;
  return networkAddress(i.address, o.prefix, version) === normalise(o.address, version);
}

/** A matcher for a key's networks (node's BlockList), built once per verified row. */
export function cidrMatcher(cidrs: readonly string[]): (ip: string) => boolean {
  const list = new BlockList();
  for (const text of cidrs) {
    const c = parseCidr(text);
    if (typeof c !== 'string') list.addSubnet(c.address, c.prefix, c.family);
  }
  return (ip: string) => {
    const version = isIP(ip);
    if (version === 0) return false;
    // An IPv4 client seen through an IPv6 socket (::ffff:a.b.c.d) is matched as IPv4 too.
    if (version === 6 && ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 && list.check(ip.slice(7), 'ipv4'))
      return true;
    return list.check(ip, version === 4 ? 'ipv4' : 'ipv6');
  };
}

const DAY_MS = 86_400_000;

/** The start of the refill period `at` lies in: the latest refill boundary at or before it (UTC midnights). */
export function refillPeriodStart(refill: CreditRefill, at: Date): Date {
  const today = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  if (refill.interval === 'daily') return new Date(today);
  const dayIn = (year: number, month: number) => {
    const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    return Date.UTC(year, month, Math.min(refill.day_of_month ?? 1, last));
  };
  const thisMonth = dayIn(at.getUTCFullYear(), at.getUTCMonth());
  return new Date(thisMonth <= at.getTime() ? thisMonth : dayIn(at.getUTCFullYear(), at.getUTCMonth() - 1));
}

/** The next refill boundary strictly after `at`. */
export function nextRefill(refill: CreditRefill, at: Date): Date {
  const start = refillPeriodStart(refill, at);
  if (refill.interval === 'daily') return new Date(start.getTime() + DAY_MS);
  // A day or more past the period start, less than two months on: the following boundary.
  let probe = new Date(start.getTime() + 27 * DAY_MS);
  while (refillPeriodStart(refill, probe).getTime() === start.getTime()) probe = new Date(probe.getTime() + DAY_MS);
  return refillPeriodStart(refill, probe);
}
