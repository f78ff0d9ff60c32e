import { setResponseHeader } from '../auth/http-utils.js';
import type { EffectiveWindow } from './effective-windows.js';
import type { WindowLeases } from './window-leases.js';

/** `RateLimit-Policy` items (draft-ietf-httpapi-ratelimit-headers), written once per window. */
const policies = new WeakMap<readonly EffectiveWindow[], string>();
const policyOf = (windows: readonly EffectiveWindow[]): string => {
  let text = policies.get(windows);
  if (text === undefined)
    policies.set(windows, (text = windows.map((w) => `"${w.label}";q=${w.limit};w=${w.window_seconds}`).join(', ')));
  return text;
};

/**
 * RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-11), on every answer of a
 * limited route: each window's remaining units and when its whole limit is back; a refused
 * window's effective window ends when its `Retry-After` (`retry`) does (the draft: never after it).
 */
export function writeRateLimitHeaders(
  response: unknown,
  leases: WindowLeases,
  keyId: string,
  windows: readonly EffectiveWindow[],
  now: number,
  refused?: EffectiveWindow,
  retry?: number,
): void {
  if (windows.length === 0) return;
  // Lower case, as Fastify stores and sends names: a name with capitals is lower-cased on every call.
  setResponseHeader(response, 'ratelimit-policy', policyOf(windows));
  let text = '';
  for (let i = 0; i < windows.length; i++) {
    const w = windows[i];
    const r = leases.remaining(keyId, w, now, windows, i);
    // t: when the whole limit is back (nothing counted so far weighs on the window any more).
    const t = w === refused ? retry! : r >= w.limit ? 0 : Math.ceil(leases.resetIn(keyId, w, now, windows, i) / 1000);
    text += `${text ? ', ' : ''}"${w.label}";r=${r};t=${t}`;
  }
  setResponseHeader(response, 'ratelimit', text);
}
