import { describe, expect, it } from 'vitest';
import { retryAfterMs, retryingFetch, type RetryEvent } from '../src/retry.js';

/** A sender answering from a script, recording each request's method and body as it arrived. */
function scripted(...answers: Array<() => Response>) {
  const seen: Array<{ method: string; body: string }> = [];
  const send = async (request: Request) => {
    seen.push({ method: request.method, body: await request.text() });
    return answers[Math.min(seen.length - 1, answers.length - 1)]();
  };
  return { send, seen };
}

const answer =
  (status: number, headers: Record<string, string> = {}) =>
  () =>
    new Response(status === 204 ? null : JSON.stringify({ status }), { status, headers });

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP-dates, and nothing else', () => {
    const now = Date.parse('2026-11-26T10:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Thu, 26 Nov 2026 10:00:02 GMT', now)).toBe(2_000);
    expect(retryAfterMs('Thu, 26 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(null, now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs('-1', now)).toBeNull();
  });
});

describe('retryingFetch', () => {
  it('retries a 429 without Retry-After after exponential backoff, sending the same body again', async () => {
    const { send, seen } = scripted(answer(429), answer(201));
    const retries: RetryEvent[] = [];
    const started = performance.now();
    const response = await retryingFetch(send, { onRetry: (e) => retries.push(e) })(
      new Request('http://127.0.0.1:1/api-keys', {
        method: 'POST',
        body: '{"org_id":"x"}',
        headers: { 'Content-Type': 'application/json' },
      }),
    );
    expect(response.status).toBe(201);
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);
    expect(seen).toEqual([
      { method: 'POST', body: '{"org_id":"x"}' },
      { method: 'POST', body: '{"org_id":"x"}' },
    ]);
    expect(retries).toEqual([
      { attempt: 1, status: 429, method: 'POST', url: 'http://127.0.0.1:1/api-keys', waitMs: 500 },
    ]);
  });

  it('retries a 503 only for a method safe to repeat: its outcome may be unknown', async () => {
    for (const method of ['GET', 'DELETE', 'PUT']) {
      const { send, seen } = scripted(answer(503, { 'Retry-After': '0' }), answer(200));
      expect((await retryingFetch(send)(new Request('http://127.0.0.1:1/x', { method }))).status).toBe(200);
      expect(seen).toHaveLength(2);
    }
    for (const method of ['POST', 'PATCH']) {
      const { send, seen } = scripted(answer(503, { 'Retry-After': '0' }), answer(200));
      expect((await retryingFetch(send)(new Request('http://127.0.0.1:1/x', { method, body: '{}' }))).status).toBe(503);
      expect(seen).toHaveLength(1);
    }
  });

  it('returns other failures at once, without retrying', async () => {
    for (const status of [400, 401, 404, 409, 500, 502]) {
      const { send, seen } = scripted(answer(status, { 'Retry-After': '0' }), answer(200));
      expect((await retryingFetch(send)(new Request('http://127.0.0.1:1/me'))).status).toBe(status);
      expect(seen).toHaveLength(1);
    }
  });

  it('stops after maxRetries and returns the last answer; maxRetries 0 turns retrying off', async () => {
    const twice = scripted(answer(429, { 'Retry-After': '0' }));
    expect((await retryingFetch(twice.send, { maxRetries: 2 })(new Request('http://127.0.0.1:1/me'))).status).toBe(429);
    expect(twice.seen).toHaveLength(3);
    const never = scripted(answer(429, { 'Retry-After': '0' }), answer(200));
    expect((await retryingFetch(never.send, { maxRetries: 0 })(new Request('http://127.0.0.1:1/me'))).status).toBe(429);
    expect(never.seen).toHaveLength(1);
  });

  it('returns an answer asking for a longer wait than maxWaitMs without waiting (backoff included)', async () => {
    const { send, seen } = scripted(answer(503, { 'Retry-After': '2' }), answer(200));
    const started = performance.now();
    expect((await retryingFetch(send, { maxWaitMs: 1_000 })(new Request('http://127.0.0.1:1/me'))).status).toBe(503);
    expect(performance.now() - started).toBeLessThan(500);
    expect(seen).toHaveLength(1);
    const backoff = scripted(answer(503), answer(200));
    expect((await retryingFetch(backoff.send, { maxWaitMs: 100 })(new Request('http://127.0.0.1:1/me'))).status).toBe(
      503,
    );
  });

  it('stops waiting when the request is aborted', async () => {
    const { send, seen } = scripted(answer(429, { 'Retry-After': '30' }), answer(200));
    const controller = new AbortController();
    const pending = retryingFetch(send)(new Request('http://127.0.0.1:1/me', { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('gave up')), 50);
    await expect(pending).rejects.toThrow('gave up');
    expect(seen).toHaveLength(1);
  });
});
