import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnvironment } from '../../src/config/app-config.js';
import { handSignedJwt, JsonText } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: session tokens without bounds: expiry, maximum age and crit headers are enforced.
 */

describe('session tokens with sane bounds', () => {
  let t: TestApp;
  let claims: Record<string, unknown>;
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  /** Signs the payload text exactly as given (jsonwebtoken cannot write 1e400). */
  const handSigned = (header: Record<string, unknown>, payloadText: string) =>
    handSignedJwt(header, new JsonText(payloadText));
  const expect401 = async (token: string, label: string) => {
    const res = await t.api.get('/me', token);
    expect(res.status, label).toBe(401);
    expect(res.headers.get('www-authenticate'), label).toMatch(/invalid_token/);
  };

  beforeAll(async () => {
    t = await startTestApp({ env: { SESSION_MAX_AGE: '3600' } });
    const w = await t.seed.world('owner');
    claims = { sub: w.userId, email: w.email };
  });
  afterAll(async () => t?.close());

  it('accepts a token within the maximum age, with and without iat (the control)', async () => {
    const iat = nowSeconds();
    expect(
      (
        await t.api.get(
          '/me',
          handSigned({ alg: 'HS256', typ: 'JWT' }, JSON.stringify({ ...claims, iat, exp: iat + 3600 })),
        )
      ).status,
    ).toBe(200);
    expect(
      (await t.api.get('/me', handSigned({ alg: 'HS256', typ: 'JWT' }, JSON.stringify({ ...claims, exp: iat + 600 }))))
        .status,
    ).toBe(200);
  });

  it('refuses an exp that is not finite, years away, or beyond SESSION_MAX_AGE from iat (401)', async () => {
    const iat = nowSeconds();
    const body = (rest: string) => `{"sub":"${claims.sub}","email":"${claims.email}",${rest}}`;
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":${iat},"exp":1e400`)), 'exp 1e400');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"exp":1e400`)), 'exp 1e400 without iat');
    await expect401(
      handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":${iat},"exp":253402300799`)),
      'exp in the year 9999',
    );
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"exp":253402300799`)), 'year 9999 without iat');
    await expect401(
      handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":${iat},"exp":${iat + 3601}`)),
      'one second over the maximum age',
    );
    await expect401(
      handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"exp":${iat + 3700}`)),
      'without iat, further than the maximum age from now',
    );
    await expect401(
      handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":253402300000,"exp":253402300799`)),
      'an iat in the future cannot stretch the age',
    );
    await expect401(
      handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":"yesterday","exp":${iat + 60}`)),
      'a non-numeric iat',
    );
  });

  it('refuses a token whose crit header names anything, as RFC 7515 requires for extensions we do not understand (401)', async () => {
    const payload = JSON.stringify({ ...claims, iat: nowSeconds(), exp: nowSeconds() + 600 });
    await expect401(
      handSigned({ alg: 'HS256', typ: 'JWT', crit: ['exp-policy'], 'exp-policy': 1 }, payload),
      'unknown crit',
    );
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT', crit: [] }, payload), 'empty crit');
  });

  it('defaults the maximum session age to 24 hours', () => {
    expect(loadEnvironment({}).SESSION_MAX_AGE).toBe(86_400);
  });
});
