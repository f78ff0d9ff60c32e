import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerToken } from '../auth/http-utils.js';

/** Constant-time check of `Authorization: Bearer <token>`; true when no token is configured. */
export function metricsTokenAccepted(expected: string | undefined, headers: Record<string, unknown>): boolean {
  if (!expected) return true;
  const given = bearerToken(headers);
  if (given === null) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export const METRICS_CHALLENGE = 'Bearer realm="metrics"';
