import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../support/raw-http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { BODY_LIMIT, TIMEOUT_MS } from './security-hostile-input.fixtures.js';

describe('the 16 KiB body limit', () => {
  let t: TestApp;
  let owner: { orgId: string; session: string };
  const countKeys = async () =>
    (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;
  const TOO_LARGE = {
    statusCode: 413,
    error: 'Payload Too Large',
    message: 'The request body is too large (limit 16 KiB)',
  };

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.seed.world('owner');
  });
  afterAll(async () => t?.close());

  /** A valid-JSON mint body of exactly `size` bytes (its name is far too long, which only a parse can tell). */
  const bodyOfSize = (orgId: string, size: number) => {
    const shell = JSON.stringify({ org_id: orgId, name: '' });
    return JSON.stringify({ org_id: orgId, name: 'n'.repeat(size - shell.length) });
  };
  const post = (body: string, headers: Array<[string, string]> = []) =>
    rawRequest(
      t.url,
      {
        method: 'POST',
        path: '/api-keys',
        headers: [['Authorization', `Bearer ${owner.session}`], ['Content-Type', 'application/json'], ...headers],
        body,
      },
      TIMEOUT_MS,
    );

  it('parses a body of exactly 16384 bytes (and refuses its over-long name with 400)', async () => {
    const body = bodyOfSize(owner.orgId, BODY_LIMIT);
    expect(Buffer.byteLength(body)).toBe(BODY_LIMIT);
    const res = await post(body);
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toBe('name must be at most 100 characters');
  });

  it('answers 413 with the standard error body to a body one byte over the limit, and writes nothing', async () => {
    const before = await countKeys();
    const res = await post(bodyOfSize(owner.orgId, BODY_LIMIT + 1));
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(await countKeys()).toBe(before);
  });

  it('answers 413, not 400, to an oversized body that is not even JSON: the limit applies before parsing', async () => {
    const res = await post('{'.repeat(BODY_LIMIT + 100));
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });

  it('answers 413 at once when Content-Length announces too much, without waiting for the body', async () => {
    const res = await rawRequest(
      t.url,
      {
        method: 'POST',
        path: '/api-keys',
        headers: [
          ['Authorization', `Bearer ${owner.session}`],
          ['Content-Type', 'application/json'],
          ['Content-Length', '10000000'],
        ],
      },
      TIMEOUT_MS,
    );
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });

  it('answers 413 to a chunked body that grows past the limit', async () => {
    const chunk = 'a'.repeat(4096);
    const chunked = `${Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('')}0\r\n\r\n`;
    const res = await post(chunked, [['Transfer-Encoding', 'chunked']]);
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });

  it('answers 413 before authentication, so an anonymous client cannot make the server buffer a large body', async () => {
    const res = await rawRequest(
      t.url,
      {
        method: 'POST',
        path: '/api-keys',
        headers: [['Content-Type', 'application/json']],
        body: 'x'.repeat(BODY_LIMIT * 4),
      },
      TIMEOUT_MS,
    );
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });
});
