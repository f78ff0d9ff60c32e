import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TestClock } from '../../../test/support/factories.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { ApiError, KeysUsageIdentityClient, type RetryEvent } from '../src/index.js';

const LIMIT = 3;

/**
 * The client's retry of a real 429 with Retry-After: the service's failed-authentication throttle
 * (AUTH_FAILURE_LIMIT per address, in one-minute windows of the service's clock) answers 429 with
 * the seconds left in the window. A test clock one second before the end of a minute makes that
 * `Retry-After: 1`; the clock moves into the next minute while the client waits.
 */
describe('the typed client retrying a 429 from the running service', () => {
  const clock = new TestClock();
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await startTestApp({ clock, env: { AUTH_FAILURE_LIMIT: String(LIMIT) } });
  });
  afterAll(async () => t?.close());

  const nextMinute = () => (Math.floor(clock.now().getTime() / 60_000) + 1) * 60_000;

  /** A fresh key (never verified from this address, so not exempt from its throttle), minted in a window of its own. */
  beforeEach(async () => {
    clock.set(new Date(nextMinute()));
    const w = await t.seed.world('owner');
    key = (await new KeysUsageIdentityClient({ baseUrl: t.url, credential: w.session }).keys.mint({ org_id: w.orgId }))
      .key;
  });

  /** Puts this address over its limit in a window of its own, `secondsLeft` before the window ends. */
  async function throttle(secondsLeft: number): Promise<void> {
    clock.set(new Date(nextMinute() + (60 - secondsLeft) * 1000));
    const guesser = new KeysUsageIdentityClient({
      baseUrl: t.url,
      credential: 'svc_live_not-a-key',
      retry: { maxRetries: 0 },
    });
    for (let i = 0; i < LIMIT; i++) await expect(guesser.me()).rejects.toMatchObject({ status: 401 });
  }

  it('waits what Retry-After says, then sends again and returns the answer', async () => {
    await throttle(1);
    const retries: RetryEvent[] = [];
    const client = new KeysUsageIdentityClient({
      baseUrl: t.url,
      credential: key,
      retry: {
        maxRetries: 2,
        maxWaitMs: 5_000,
        onRetry: (event) => {
          retries.push(event);
          // The next minute has begun by the time the client sends again.
          clock.advance(1_000);
        },
      },
    });
    const started = performance.now();
    const me = await client.me();
    const elapsed = performance.now() - started;
    expect(me.org_role).toBe('owner');
    expect(retries).toEqual([{ attempt: 1, status: 429, method: 'GET', url: `${t.url}/me`, waitMs: 1_000 }]);
    expect(elapsed).toBeGreaterThanOrEqual(1_000);
  });

  it('gives up after maxRetries and throws the last 429, with its Retry-After', async () => {
    await throttle(1);
    const retries: RetryEvent[] = [];
    const client = new KeysUsageIdentityClient({
      baseUrl: t.url,
      credential: key,
      retry: { maxRetries: 2, onRetry: (e) => retries.push(e) },
    });
    const started = performance.now();
    const error = await client.me().catch((e: unknown) => e);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 429,
      retryAfterMs: 1_000,
      body: { statusCode: 429, error: 'Too Many Requests' },
    });
    expect(retries.map((r) => [r.attempt, r.status, r.waitMs])).toEqual([
      [1, 429, 1_000],
      [2, 429, 1_000],
    ]);
  });

  it('does not wait longer than maxWaitMs: a Retry-After beyond it is returned at once', async () => {
    await throttle(60);
    const retries: RetryEvent[] = [];
    const client = new KeysUsageIdentityClient({
      baseUrl: t.url,
      credential: key,
      retry: { maxWaitMs: 5_000, onRetry: (e) => retries.push(e) },
    });
    const started = performance.now();
    await expect(client.me()).rejects.toMatchObject({ status: 429, retryAfterMs: 60_000 });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(retries).toEqual([]);
  });
});
