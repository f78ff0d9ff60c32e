import jwt from 'jsonwebtoken';
import { createSecretKey } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Settings } from '../settings/settings.js';
import { PassportRegistry } from './passport-registry.js';
import type { Principal } from './principal.js';
import { SessionStrategy } from './session.strategy.js';

const SECRET = 'unit-session-secret-0123456789abcdef-0123456789';
const USER = '22222222-2222-4222-8222-222222222222';

function strategy(cacheOn = true) {
  return new SessionStrategy(new Settings({ session: { secret: SECRET }, verificationCache: { enabled: cacheOn } }), new PassportRegistry());
}

const sign = (claims: object, seconds: number) =>
  jwt.sign({ email: 'a@example.com', ...claims }, createSecretKey(Buffer.from(SECRET)), { algorithm: 'HS256', subject: USER, expiresIn: seconds });

/** One passport attempt, as passport makes it: the strategy with success/fail/error of its own. */
function attempt(s: SessionStrategy, token: string, headers: Record<string, string> = {}): Promise<{ user?: Principal; failed?: boolean; error?: unknown }> {
  return new Promise((resolve) => {
    const a = Object.assign(Object.create(s), {
      success: (user: Principal) => resolve({ user }),
      fail: () => resolve({ failed: true }),
      error: (error: unknown) => resolve({ error }),
    });
    a.authenticate({ headers: { ...headers, authorization: `Bearer ${token}` } }, { session: false });
  });
}

describe('SessionStrategy, verified tokens', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('verifies a token once, then answers it without verifying its signature again', async () => {
    const verify = vi.spyOn(jwt, 'verify');
    const s = strategy();
    const token = sign({}, 600);
    for (let i = 0; i < 3; i++) expect((await attempt(s, token)).user?.userId).toBe(USER);
    expect(verify).toHaveBeenCalledTimes(1);
    // A tampered signature is not the cached token: verified, and refused.
    const tampered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expect((await attempt(s, tampered)).failed).toBe(true);
    expect(verify).toHaveBeenCalledTimes(2);
  });

  it("does not answer another payload under a cached token's signature, and reads X-Org-Id on every request", async () => {
    const verify = vi.spyOn(jwt, 'verify');
    const s = strategy();
    const token = sign({}, 600);
    expect((await attempt(s, token)).user).toBeDefined();
    const [header, , signature] = token.split('.');
    const otherPayload = sign({ email: 'b@example.com' }, 600).split('.')[1];
    expect((await attempt(s, `${header}.${otherPayload}.${signature}`)).failed).toBe(true);
    expect(verify).toHaveBeenCalledTimes(2);

    const ORG = '33333333-3333-4333-8333-333333333333';
    expect((await attempt(s, token, { 'x-org-id': ORG.toUpperCase() })).user?.requestedOrgId).toBe(ORG);
    expect((await attempt(s, token, { 'x-org-id': 'not-a-uuid' })).error).toMatchObject({ status: 400 });
    expect((await attempt(s, token)).user?.requestedOrgId).toBeNull();
    expect(verify).toHaveBeenCalledTimes(2);
  });

  it('still refuses a cached token from its exp on', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2030-01-01T00:00:00Z'));
    const s = strategy();
    const token = sign({}, 5);
    expect((await attempt(s, token)).user).toBeDefined();
    vi.setSystemTime(new Date('2030-01-01T00:00:04Z'));
    expect((await attempt(s, token)).user).toBeDefined();
    vi.setSystemTime(new Date('2030-01-01T00:00:05Z'));
    expect((await attempt(s, token)).failed).toBe(true);
  });

  it('verifies every time with the verification cache off', async () => {
    const verify = vi.spyOn(jwt, 'verify');
    const s = strategy(false);
    const token = sign({}, 600);
    for (let i = 0; i < 3; i++) expect((await attempt(s, token)).user).toBeDefined();
    expect(verify).toHaveBeenCalledTimes(3);
  });
});
