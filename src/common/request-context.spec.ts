import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../auth/api-key-format.js';
import { loggablePath, requestIdFor, scrubCredentials } from './request-context.js';

const raw = (headers: Record<string, string> = {}, url = '/') => ({ headers, url }) as unknown as IncomingMessage;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('request ids', () => {
  it('adopts a caller id made of safe characters, up to 128 of them', () => {
    for (const id of ['abc', 'trace-1.2:3', 'a/b+c=d@e_f', 'x'.repeat(128)]) expect(requestIdFor(raw({ 'x-request-id': id }))).toBe(id);
  });

  it('generates a UUID when the caller sends none, an unsafe one, or one that looks like a credential', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    for (const id of [undefined, '', 'has space', 'quote"d', 'x'.repeat(129), 'line\nbreak', generateApiKey().key, jwt]) {
      expect(requestIdFor(raw(id === undefined ? {} : { 'x-request-id': id }))).toMatch(UUID);
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
