import jwt from 'jsonwebtoken';
import { createSecretKey } from 'node:crypto';
import passport from 'passport';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Settings } from '../settings/settings.js';
import type { Principal } from './principal.js';
import { SessionStrategy } from './session.strategy.js';

const SECRET = 'unit-session-secret-0123456789abcdef-0123456789';
const USER = '22222222-2222-4222-8222-222222222222';

function strategy(cacheOn = true) {
  return new SessionStrategy(new Settings({ session: { secret: SECRET }, verificationCache: { enabled: cacheOn } }));
}

const sign = (claims: object, seconds: number) =>
  jwt.sign({ email: 'a@example.com', ...claims }, createSecretKey(Buffer.from(SECRET)), {
    algorithm: 'HS256',
    subject: USER,
    expiresIn: seconds,
  });

/** One verification, as CredentialGuard asks for it. */
async function attempt(
  s: SessionStrategy,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ user?: Principal; failed?: boolean; error?: unknown }> {
  try {
    const user = await s.verify({ headers: { ...headers, authorization: `Bearer ${token}` } });
    return user ? { user } : { failed: true };
  } catch (error) {
    return { error };
  }
}

/** One attempt through passport-jwt's own path, as @nestjs/passport's AuthGuard would make it. */
function throughPassport(s: SessionStrategy, token: string): Promise<Principal | false> {
  const instance = new passport.Passport();
  instance.use('session-jwt', s);
  return new Promise((resolve, reject) => {
    const run = instance.authenticate(
      'session-jwt',
      { session: false },
      (error: Error | null, user: Principal | false) => (error ? reject(error) : resolve(user)),
    ) as (request: object, response: object, next: (error: unknown) => void) => void;
    run({ headers: { authorization: `Bearer ${token}` } }, {}, reject);
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

  it("gives the same answers through passport-jwt's own path", async () => {
    const s = strategy(false);
    const token = sign({}, 600);
    expect(await throughPassport(s, token)).toMatchObject({ kind: 'session', userId: USER });
    expect(await throughPassport(s, token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA'))).toBe(false);
    const none = jwt.sign({ email: 'a@example.com' }, '', { algorithm: 'none', subject: USER, expiresIn: 600 });
    expect(await throughPassport(s, none)).toBe(false);
    expect((await attempt(s, none)).failed).toBe(true);
  });
});
