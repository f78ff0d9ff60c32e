import { describe, expect, it } from 'vitest';
import { TooManyRequests } from './too-many-requests.js';

describe('TooManyRequests', () => {
  it('writes Retry-After once, in whole seconds of at least 1, and names the budget in the body', () => {
    const headers: Record<string, string> = {};
    const reply = { header: (n: string, v: string) => (headers[n] = v) };
    const error = new TooManyRequests(reply, { budget: 'key_window:default', message: 'slow down', retryAfter: 0.2 });
    expect(error.getStatus()).toBe(429);
    expect(headers).toEqual({ 'Retry-After': '1' });
    expect(error.getResponse()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: 'slow down',
      budget: 'key_window:default',
      retry_after: 1,
    });
  });

  it('is thrown without a response where the thrower has none, and written onto one later', () => {
    const error = new TooManyRequests(null, { budget: 'webhook_sends', message: 'later', retryAfter: 12.3 });
    const set: string[] = [];
    error.onto({ setHeader: (n: string, v: string) => set.push(`${n}: ${v}`) });
    expect(set).toEqual(['Retry-After: 13']);
  });
});
