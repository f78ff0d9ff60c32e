import { describe, expect, it, vi } from 'vitest';
import { API_VERSIONS } from '../../../src/versioning/api-versions.js';
import { createApi, NETWORK_ERROR, PAGE_API_VERSION } from './api.js';
import { ApiError, PageError } from './errors.js';

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

describe('the page’s API client', () => {
  it('pins every request to the newest API version of the service, with the session token', async () => {
    expect(PAGE_API_VERSION).toBe(API_VERSIONS.at(-1)!.date);
    const sent: Request[] = [];
    const api = createApi({
      baseUrl: 'http://svc.test',
      token: () => 'tok',
      onUnauthorized: () => undefined,
      fetch: (input) => {
        sent.push(input as Request);
        return Promise.resolve(json(200, { keys: [], next_cursor: null }));
      },
    });
    await api.keys.list({ org_id: 'o1', limit: 50 });
    await api.usage.get({ orgId: 'o1' }).catch(() => undefined);
    expect(sent.map((r) => r.headers.get('Api-Version'))).toEqual([PAGE_API_VERSION, PAGE_API_VERSION]);
    expect(sent[0]!.headers.get('Authorization')).toBe('Bearer tok');
    expect(new URL(sent[0]!.url).search).toBe('?org_id=o1&limit=50');
    expect(sent[1]!.headers.get('X-Org-Id')).toBe('o1');
  });

  it('does not retry (the page offers “Try again”), reports a 401 once with the service’s message, and names a network failure', async () => {
    const onUnauthorized = vi.fn();
    let calls = 0;
    const answers = [
      json(503, { statusCode: 503, error: 'Service Unavailable', message: 'busy' }),
      json(401, { statusCode: 401, error: 'Unauthorized', message: 'session expired' }),
    ];
    const api = createApi({
      baseUrl: 'http://svc.test',
      token: () => 'tok',
      onUnauthorized,
      fetch: () => {
        calls += 1;
        const answer = answers.shift();
        return answer ? Promise.resolve(answer) : Promise.reject(new TypeError('Failed to fetch'));
      },
    });
    const busy = await api.keys.list().catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(ApiError);
    expect(calls).toBe(1);
    const refused = await api.keys.list().catch((e: unknown) => e);
    expect((refused as ApiError).status).toBe(401);
    expect(onUnauthorized).toHaveBeenCalledExactlyOnceWith('session expired');
    const offline = await api.keys.list().catch((e: unknown) => e);
    expect(offline).toBeInstanceOf(PageError);
    expect((offline as PageError).message).toBe(NETWORK_ERROR);
  });
});
