import fc from 'fast-check';
import { afterAll, beforeAll, expect } from 'vitest';
import { rawRequest, type RawResponse } from '../support/raw-http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
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
  expect(Object.keys(body ?? {}).sort(), `${where} → ${res.text.slice(0, 200)}`).toEqual([
    'error',
    'message',
    'statusCode',
  ]);
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
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    maxLength,
  });

/** The app every hostile-input file runs against: an owner with a key, and another org's key. */
export interface HostileWorld {
  t: TestApp;
  owner: { orgId: string; userId: string; session: string };
  foreign: { orgId: string; keyId: string };
  apiKey: string;
}

/** Starts the app before the file's tests and closes it after; the fields are set in beforeAll. */
export function hostileWorld(): HostileWorld & {
  send: (method: string, path: string, headers?: Array<[string, string]>, body?: string) => Promise<RawResponse>;
  countKeys: () => Promise<number>;
  countRevoked: () => Promise<number>;
} {
  const w = {} as HostileWorld;
  const count = async (sql: string) => (await w.t.db.pool.query<{ n: number }>(sql)).rows[0].n;
  beforeAll(async () => {
    w.t = await startTestApp();
    w.owner = await w.t.seed.world('owner');
    const other = await w.t.seed.world('owner');
    const otherKey = await w.t.api.post('/api-keys', other.session, { org_id: other.orgId });
    w.foreign = { orgId: other.orgId, keyId: otherKey.body.id };
    w.apiKey = (await w.t.api.post('/api-keys', w.owner.session, { org_id: w.owner.orgId })).body.key;
  });
  afterAll(async () => w.t?.close());
  return Object.assign(w, {
    send: (method: string, path: string, headers: Array<[string, string]> = [], body?: string) =>
      rawRequest(w.t.url, { method, path, headers, body }, TIMEOUT_MS),
    countKeys: () => count('SELECT count(*)::int AS n FROM api_keys'),
    countRevoked: () => count('SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NOT NULL'),
  });
}
