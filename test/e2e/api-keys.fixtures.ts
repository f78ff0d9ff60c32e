import { expect } from 'vitest';
import type { ApiResponse } from '../support/http.js';
import type { TestApp } from '../support/test-app.js';

/** What the contract says a key string looks like: the prefix, then only [A-Za-z0-9_]. */
export const KEY_SHAPE = /^svc_live_[A-Za-z0-9_]+$/;
export const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** RFC 3339 as `Date#toISOString` writes it (UTC, milliseconds). */
export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const READ = 'decisions:read';
export const WRITE = 'decisions:write';

export { NOWHERE } from '../support/factories.js';

/** The part of a key after its public lookup id: what must never be stored or logged. */
export function secretPart(key: string, lookup: string): string {
  const at = key.indexOf(lookup);
  expect(at).toBeGreaterThan(0);
  return key.slice(at + lookup.length);
}

/** The key with one character of its secret part replaced by another alphabet character. */
export function withOneCharChanged(key: string, index = key.length - 10): string {
  const c = key[index];
  const replacement = c === 'a' ? 'b' : 'a';
  return key.slice(0, index) + replacement + key.slice(index + 1);
}

export async function mintOk(t: TestApp, session: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await t.api.post('/api-keys', session, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function listKeys(t: TestApp, session: string, query = ''): Promise<Array<Record<string, any>>> {
  const res = await t.api.get(`/api-keys${query}`, session);
  expect(res.status, res.text).toBe(200);
  return res.body.keys;
}

/** How long `expect.poll` waits for what the service writes behind its responses (last_used_at). */
export const BEHIND_THE_RESPONSE = { timeout: 5_000, interval: 20 };

/** A 400 whose message names the field and the rule it broke. */
export function expect400(res: ApiResponse, ...mentions: Array<string | RegExp>): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
  expect(typeof res.body.message).toBe('string');
  for (const m of mentions) expect(res.body.message).toMatch(m);
}
