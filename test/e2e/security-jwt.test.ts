import { createHmac, generateKeyPairSync, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { NOWHERE } from '../support/factories.js';
import type { ApiResponse } from '../support/http.js';
import { handSignedJwt, jwtPart, Seeder, TEST_SESSION_SECRET } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Attacks on session JWTs, each against the configuration it targets: an HS256 secret with an
 * issuer and audience, a PEM public key (RSA, EC), both at once, and a JWKS endpoint.
 */
const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'keys-usage-identity';

const b64 = jwtPart;
const hmac = (secret: string | Buffer, data: string) => createHmac('sha256', secret).update(data).digest('base64url');

/** A token with any header, signed by hand (HS256 over whatever secret is given). */
function handSigned(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  secret: string | Buffer,
): string {
  return handSignedJwt(header, payload, secret);
}

function unsigned(alg: string, payload: Record<string, unknown>): string {
  return `${b64({ alg, typ: 'JWT' })}.${b64(payload)}.`;
}

function expectInvalidToken(res: ApiResponse): void {
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  expect(res.body).toEqual({
    statusCode: 401,
    error: 'Unauthorized',
    message: 'The credential is invalid, expired or revoked',
  });
}

const now = () => Math.floor(Date.now() / 1000);
const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pem = (k: KeyObject) => k.export({ type: 'spki', format: 'pem' }).toString();

describe('session JWT attacks', () => {
  let db: TestDatabase;
  let user: { id: string; email: string; orgId: string };
  let claims: Record<string, unknown>;

  beforeAll(async () => {
    db = await createTestDatabase();
    const seed = new Seeder(db.pool);
    const w = await seed.world('owner');
    user = { id: w.userId, email: w.email, orgId: w.orgId };
    claims = { sub: user.id, email: user.email };
  });
  afterAll(async () => db?.drop());

  describe('with SESSION_JWT_SECRET, SESSION_JWT_ISSUER and SESSION_JWT_AUDIENCE', () => {
    let t: TestApp;
    const sign = (payload: Record<string, unknown>, options: jwt.SignOptions = {}, secret = TEST_SESSION_SECRET) =>
      jwt.sign(payload, secret, {
        algorithm: 'HS256',
        issuer: ISSUER,
        audience: AUDIENCE,
        ...(payload.exp ? {} : { expiresIn: 600 }),
        ...options,
      });

    beforeAll(async () => {
      t = await startTestApp({ db, env: { SESSION_JWT_ISSUER: ISSUER, SESSION_JWT_AUDIENCE: AUDIENCE } });
    });
    afterAll(async () => t?.close());

    it('accepts a well-formed token (the control for every refusal below)', async () => {
      const res = await t.api.get('/me', sign(claims));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ user_id: user.id, email: user.email, org_id: user.orgId });
    });

    it.each(['none', 'None', 'NONE', 'nOnE'])('refuses an unsigned token with alg "%s"', async (alg) => {
      const payload = { ...claims, iss: ISSUER, aud: AUDIENCE, exp: now() + 600 };
      expectInvalidToken(await t.api.get('/me', unsigned(alg, payload)));
      // A signature left on does not help either.
      expectInvalidToken(await t.api.get('/me', unsigned(alg, payload) + hmac(TEST_SESSION_SECRET, 'x')));
    });

    it('refuses an unlisted algorithm even when signed with the right secret (HS512)', async () => {
      expectInvalidToken(await t.api.get('/me', sign(claims, { algorithm: 'HS512' })));
    });

    it('refuses an RS256 token when only the HS256 secret is configured', async () => {
      const { privateKey } = rsa();
      const token = jwt.sign(claims, privateKey, {
        algorithm: 'RS256',
        expiresIn: 600,
        issuer: ISSUER,
        audience: AUDIENCE,
      });
      expectInvalidToken(await t.api.get('/me', token));
    });

    it('refuses a token without exp', async () => {
      const token = handSigned(
        { alg: 'HS256', typ: 'JWT' },
        { ...claims, iss: ISSUER, aud: AUDIENCE, iat: now() },
        TEST_SESSION_SECRET,
      );
      expectInvalidToken(await t.api.get('/me', token));
    });

    it('refuses an expired token', async () => {
      expectInvalidToken(await t.api.get('/me', sign({ ...claims, exp: now() - 60 })));
    });

    it('refuses a token that is not valid yet (nbf in the future)', async () => {
      expectInvalidToken(await t.api.get('/me', sign(claims, { notBefore: 600 })));
    });

    it('refuses a wrong or missing issuer', async () => {
      expectInvalidToken(await t.api.get('/me', sign(claims, { issuer: 'https://evil.example/' })));
      const { iss: _omit, ...noIssuer } = jwt.decode(sign(claims)) as Record<string, unknown>;
      expectInvalidToken(await t.api.get('/me', handSigned({ alg: 'HS256' }, noIssuer, TEST_SESSION_SECRET)));
    });

    it('refuses a wrong or missing audience', async () => {
      expectInvalidToken(await t.api.get('/me', sign(claims, { audience: 'some-other-service' })));
      const { aud: _omit, ...noAudience } = jwt.decode(sign(claims)) as Record<string, unknown>;
      expectInvalidToken(await t.api.get('/me', handSigned({ alg: 'HS256' }, noAudience, TEST_SESSION_SECRET)));
    });

    it('refuses a subject that is not a UUID, or none', async () => {
      expectInvalidToken(await t.api.get('/me', sign({ ...claims, sub: 'admin' })));
      expectInvalidToken(await t.api.get('/me', sign({ ...claims, sub: `${user.id}' OR '1'='1` })));
      expectInvalidToken(await t.api.get('/me', sign({ email: user.email })));
    });

    it('refuses a token without an email, or with one that is not a string', async () => {
      expectInvalidToken(await t.api.get('/me', sign({ sub: user.id })));
      expectInvalidToken(await t.api.get('/me', sign({ sub: user.id, email: ['a@example.com'] })));
    });

    it('refuses a token signed with another secret, or whose payload was changed after signing', async () => {
      expectInvalidToken(await t.api.get('/me', sign(claims, {}, 'another-secret-0123456789abcdef-0123456789')));
      const [h, , s] = sign(claims).split('.');
      const forged = b64({ ...claims, sub: NOWHERE, iss: ISSUER, aud: AUDIENCE, exp: now() + 600 });
      expectInvalidToken(await t.api.get('/me', `${h}.${forged}.${s}`));
    });

    it('refuses a session on key lifecycle routes the same way as on /me', async () => {
      expectInvalidToken(
        await t.api.post('/api-keys', unsigned('none', { ...claims, exp: now() + 600 }), { org_id: user.orgId }),
      );
      expectInvalidToken(await t.api.get('/api-keys', sign(claims, { notBefore: 600 })));
    });
  });

  describe('with SESSION_JWT_PUBLIC_KEY (RSA) only', () => {
    let t: TestApp;
    const pair = rsa();
    const publicPem = pem(pair.publicKey);

    beforeAll(async () => {
      t = await startTestApp({ db, env: { SESSION_JWT_SECRET: undefined, SESSION_JWT_PUBLIC_KEY: publicPem } });
    });
    afterAll(async () => t?.close());

    it('accepts an RS256 token signed with the matching private key', async () => {
      const token = jwt.sign(claims, pair.privateKey, { algorithm: 'RS256', expiresIn: 600 });
      const res = await t.api.get('/me', token);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ user_id: user.id, email: user.email });
    });

    it('refuses an HS256 token whose HMAC key is the public key (algorithm confusion)', async () => {
      const payload = { ...claims, exp: now() + 600 };
      expectInvalidToken(await t.api.get('/me', handSigned({ alg: 'HS256', typ: 'JWT' }, payload, publicPem)));
      expectInvalidToken(
        await t.api.get(
          '/me',
          handSigned({ alg: 'HS256', typ: 'JWT' }, payload, pair.publicKey.export({ type: 'spki', format: 'der' })),
        ),
      );
    });

    it('refuses an HS256 token signed with the test secret, since no secret is configured', async () => {
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, TEST_SESSION_SECRET, { algorithm: 'HS256', expiresIn: 600 })),
      );
    });

    it('refuses alg none, another RSA key, an EC key and an unlisted RSA algorithm (PS256)', async () => {
      expectInvalidToken(await t.api.get('/me', unsigned('none', { ...claims, exp: now() + 600 })));
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, rsa().privateKey, { algorithm: 'RS256', expiresIn: 600 })),
      );
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, ec().privateKey, { algorithm: 'ES256', expiresIn: 600 })),
      );
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, pair.privateKey, { algorithm: 'PS256', expiresIn: 600 })),
      );
    });

    it('still requires exp and refuses expired and not-yet-valid tokens', async () => {
      expectInvalidToken(await t.api.get('/me', jwt.sign(claims, pair.privateKey, { algorithm: 'RS256' })));
      expectInvalidToken(
        await t.api.get('/me', jwt.sign({ ...claims, exp: now() - 60 }, pair.privateKey, { algorithm: 'RS256' })),
      );
      expectInvalidToken(
        await t.api.get(
          '/me',
          jwt.sign(claims, pair.privateKey, { algorithm: 'RS256', expiresIn: 600, notBefore: 600 }),
        ),
      );
    });
  });

  describe('with both SESSION_JWT_SECRET and SESSION_JWT_PUBLIC_KEY', () => {
    let t: TestApp;
    const pair = rsa();
    const publicPem = pem(pair.publicKey);

    beforeAll(async () => {
      t = await startTestApp({ db, env: { SESSION_JWT_PUBLIC_KEY: publicPem } });
    });
    afterAll(async () => t?.close());

    it('accepts both real credentials', async () => {
      expect(
        (await t.api.get('/me', jwt.sign(claims, TEST_SESSION_SECRET, { algorithm: 'HS256', expiresIn: 600 }))).status,
      ).toBe(200);
      expect(
        (await t.api.get('/me', jwt.sign(claims, pair.privateKey, { algorithm: 'RS256', expiresIn: 600 }))).status,
      ).toBe(200);
    });

    it('refuses an HS256 token signed with the public key: HS256 is only ever checked against the secret', async () => {
      expectInvalidToken(
        await t.api.get('/me', handSigned({ alg: 'HS256', typ: 'JWT' }, { ...claims, exp: now() + 600 }, publicPem)),
      );
    });
  });

  describe('with SESSION_JWT_PUBLIC_KEY (EC P-256)', () => {
    let t: TestApp;
    const pair = ec();
    const publicPem = pem(pair.publicKey);

    beforeAll(async () => {
      t = await startTestApp({ db, env: { SESSION_JWT_SECRET: undefined, SESSION_JWT_PUBLIC_KEY: publicPem } });
    });
    afterAll(async () => t?.close());

    it('accepts an ES256 token signed with the matching private key', async () => {
      const res = await t.api.get('/me', jwt.sign(claims, pair.privateKey, { algorithm: 'ES256', expiresIn: 600 }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ user_id: user.id });
    });

    it('refuses another EC key, an RSA key and an HS256 token keyed with the public key', async () => {
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, ec().privateKey, { algorithm: 'ES256', expiresIn: 600 })),
      );
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, rsa().privateKey, { algorithm: 'RS256', expiresIn: 600 })),
      );
      expectInvalidToken(
        await t.api.get('/me', handSigned({ alg: 'HS256' }, { ...claims, exp: now() + 600 }, publicPem)),
      );
    });
  });

  describe('with SESSION_JWT_JWKS_URI', () => {
    let t: TestApp;
    let jwks: http.Server;
    const pair = rsa();

    beforeAll(async () => {
      const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' };
      jwks = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: [jwk] }));
      });
      await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
      const uri = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
      t = await startTestApp({ db, env: { SESSION_JWT_SECRET: undefined, SESSION_JWT_JWKS_URI: uri } });
    });
    afterAll(async () => {
      await t?.close();
      await new Promise((resolve) => jwks?.close(resolve));
    });

    it('accepts an RS256 token whose kid names a published key', async () => {
      expect(
        (await t.api.get('/me', jwt.sign(claims, pair.privateKey, { algorithm: 'RS256', expiresIn: 600, keyid: 'k1' })))
          .status,
      ).toBe(200);
    });

    it('refuses an unknown kid, a missing kid, a foreign key under a known kid, and HS256', async () => {
      expectInvalidToken(
        await t.api.get(
          '/me',
          jwt.sign(claims, pair.privateKey, { algorithm: 'RS256', expiresIn: 600, keyid: 'nope' }),
        ),
      );
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, pair.privateKey, { algorithm: 'RS256', expiresIn: 600 })),
      );
      expectInvalidToken(
        await t.api.get('/me', jwt.sign(claims, rsa().privateKey, { algorithm: 'RS256', expiresIn: 600, keyid: 'k1' })),
      );
      expectInvalidToken(
        await t.api.get(
          '/me',
          handSigned({ alg: 'HS256', kid: 'k1' }, { ...claims, exp: now() + 600 }, pem(pair.publicKey)),
        ),
      );
    });
  });
});

describe('two apps with different credential settings in one process', () => {
  it('each verify with their own settings (passport keeps one process-wide registry of strategy names)', async () => {
    const db = await createTestDatabase();
    const pair = rsa();
    const hs = await startTestApp({ db });
    const rs = await startTestApp({
      db,
      env: { SESSION_JWT_SECRET: undefined, SESSION_JWT_PUBLIC_KEY: pem(pair.publicKey), API_KEY_SECRET: undefined },
    });
    try {
      const w = await hs.seed.world('owner');
      const key = (await hs.api.post('/api-keys', w.session, { org_id: w.orgId })).body.key;
      const rsToken = jwt.sign({ sub: w.userId, email: w.email }, pair.privateKey, {
        algorithm: 'RS256',
        expiresIn: 600,
      });

      expect((await hs.api.get('/me', w.session)).status).toBe(200);
      expect((await hs.api.get('/me', key)).status).toBe(200);
      expectInvalidToken(await hs.api.get('/me', rsToken));

      expect((await rs.api.get('/me', rsToken)).status).toBe(200);
      expectInvalidToken(await rs.api.get('/me', w.session));
      expectInvalidToken(await rs.api.get('/me', key));
    } finally {
      await rs.close();
      await hs.close();
      await db.drop();
    }
  });
});
