import { Injectable } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { Settings } from '../core/settings.js';

const WINDOW_MS = 60_000;
const MAX_TRACKED = 50_000;

/**
 * Failed authentications per client address in a fixed one-minute window. Once an address
 * reaches the limit, its requests get 429 until the window ends; successes are not counted.
 * Per instance: with N replicas an address gets at most N × limit failures a minute.
 * An IPv6 client is counted by its /64 network (one host commonly holds a whole /64, so per
 * address it could rotate forever); an IPv4-mapped IPv6 address counts as its IPv4 address.
 */
@Injectable()
export class AuthFailureThrottle {
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(private readonly settings: Settings) {}

  /** Seconds the address must wait, or 0 when it may try. */
  retryAfter(address: string): number {
    const limit = this.settings.authFailureLimit;
    if (limit <= 0) return 0;
    address = throttledUnit(address);
    const w = this.windows.get(address);
    if (!w) return 0;
    const now = this.settings.clock.now().getTime();
    if (now - w.start >= WINDOW_MS) {
      this.windows.delete(address);
      return 0;
    }
    return w.failures >= limit ? Math.max(1, Math.ceil((w.start + WINDOW_MS - now) / 1000)) : 0;
  }

  recordFailure(address: string): void {
    if (this.settings.authFailureLimit <= 0) return;
    address = throttledUnit(address);
    const now = this.settings.clock.now().getTime();
    const w = this.windows.get(address);
    if (w && now - w.start < WINDOW_MS) {
      w.failures++;
      return;
    }
    if (this.windows.size >= MAX_TRACKED) this.sweep(now);
    this.windows.set(address, { start: now, failures: 1 });
  }

  private sweep(now: number): void {
    for (const [a, w] of this.windows) if (now - w.start >= WINDOW_MS) this.windows.delete(a);
    // Still full of live windows: drop the oldest rather than grow without bound.
    if (this.windows.size >= MAX_TRACKED) {
      const first = this.windows.keys().next().value;
      if (first !== undefined) this.windows.delete(first);
    }
  }
}

/** The unit an address is throttled as: an IPv4 address, or the /64 network of an IPv6 address. */
export function throttledUnit(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  const bare = address.split('%')[0].toLowerCase();
  const groups = (part: string) => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const [left, right] = bare.includes('::') ? bare.split('::') : [bare, undefined];
  const head = groups(left);
  const tail = right === undefined ? [] : groups(right);
  const full = right === undefined ? head : [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  return `${full.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}
