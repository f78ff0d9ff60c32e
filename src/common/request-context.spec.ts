import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../auth/api-key-format.js';
import { clientRequestIdOf, loggablePath, newRequestId, requestOriginOf, scrubCredentials } from './request-context.js';

const raw = (headers: Record<string, string> = {}, url = '/') => ({ headers, url }) as unknown as IncomingMessage;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('request ids', () => {
  it("are the service's own: a fresh UUID per request, whatever the caller sends", () => {
    const ids = new Set(Array.from({ length: 100 }, () => newRequestId()));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(UUID);
  });

  it("keep a caller's id made of safe characters, up to 128 of them, beside the service's", () => {
    for (const id of ['abc', 'trace-1.2:3', 'a/b+c=d@e_f', 'x'.repeat(128)])
      expect(clientRequestIdOf({ 'x-request-id': id })).toBe(id);
    const origin = requestOriginOf({ id: 'ours', ip: '203.0.113.7', headers: { 'x-request-id': 'theirs' } });
    expect(origin).toMatchObject({ requestId: 'ours', clientRequestId: 'theirs', clientAddress: '203.0.113.7' });
  });

  it("never take the caller's id as the service's, even where the framework has no id of its own (Express)", () => {
    expect(requestOriginOf({ headers: { 'x-request-id': 'theirs' } })).toMatchObject({
      requestId: null,
      clientRequestId: 'theirs',
    });
  });

  it('drop a caller id that is missing, unsafe, or looks like a credential', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    for (const id of [
      undefined,
      '',
      'has space',
      'quote"d',
      'x'.repeat(129),
      'line\nbreak',
      generateApiKey().key,
      jwt,
    ]) {
      expect(clientRequestIdOf(id === undefined ? {} : { 'x-request-id': id })).toBeNull();
    }
  });
});

describe('loggable paths', () => {
  it('drops the query string and masks anything credential-shaped', () => {
    const key = generateApiKey().key;
    expect(loggablePath(raw({}, `/api-keys/${key}?api_key=${key}`))).toBe('/api-keys/[REDACTED]');
    expect(scrubCredentials('/x/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig/y')).toBe('/x/[REDACTED]/y');
    expect(loggablePath(raw({}, '/me'))).toBe('/me');
  });
});
