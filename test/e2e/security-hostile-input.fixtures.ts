import fc from 'fast-check';
import { expect } from 'vitest';
import type { RawResponse } from '../support/raw-http.js';
import { handSignedJwt, jwtPart } from '../support/seed.js';

/**
 * Property-based hostile input over every endpoint, through raw sockets (so bytes that fetch
 * refuses to send are sent too). Every answer to bad input must be a 4xx with the service's error
 * shape; no answer may be a 5xx or take longer than the per-request timeout (a hang); a refused
 * mint must write nothing; nothing may pollute Object.prototype.
 */
export const RUNS = 150;
export const TIMEOUT_MS = 5_000;
export const SCOPES = ['decisions:read', 'decisions:write'];
export const BODY_LIMIT = 16 * 1024;

export function expectErrorShape(res: RawResponse, context: unknown): void {
  const where = JSON.stringify(context)?.slice(0, 300);
  expect(res.status, where).toBeGreaterThanOrEqual(400);
  expect(res.status, where).toBeLessThan(500);
  expect(res.headers['x-content-type-options'], where).toBe('nosniff');
  expect(res.headers['x-powered-by'], where).toBeUndefined();
  const body = res.body as Record<string, unknown>;
  expect(Object.keys(body ?? {}).sort(), `${where} → ${res.text.slice(0, 200)}`).toEqual(['error', 'message', 'statusCode']);
  expect(body.statusCode, where).toBe(res.status);
  expect(typeof body.error === 'string' && body.error.length > 0, where).toBe(true);
  expect(typeof body.message === 'string' && body.message.length > 0, where).toBe(true);
}

/** A JSON text built field by field, so keys such as `__proto__` are written as keys. */
export function jsonObject(entries: Array<[string, unknown]>): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
}

export const b64 = jwtPart;
/** An HS256 JWT over any JSON header and payload, signed with the right secret (unless another is given). */
export const signedJwt = handSignedJwt;

/** A body field left out. */
export const ABSENT = null;
export type Field = { value: unknown; valid: boolean } | typeof ABSENT;

export const wellFormed = (s: string) => !/\p{Cs}/u.test(s);
export const validName = (v: unknown) => typeof v === 'string' && v.length <= 100 && !/[\0\p{Cs}]/u.test(v);
export const validScopes = (v: unknown) => Array.isArray(v) && v.every((s) => SCOPES.includes(s as string));
export const validDays = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 366;
/** What the server sees after JSON round-trip (NaN → null, -0 → 0). */
export const wire = (v: unknown): unknown => JSON.parse(JSON.stringify(v) ?? 'null');

/** A string fast-check may fill with any code point, NUL and lone surrogates included. */
export const anyText = (maxLength: number) => fc.string({ unit: 'binary', maxLength });
export const printable = (minLength: number, maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength, maxLength });
/** Header-safe text: any byte but CR, LF and NUL (Node refuses those before the app sees them). */
export const headerText = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c)), maxLength });
