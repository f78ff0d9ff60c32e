import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** Sessions signed by an identity provider's rotating keys, fetched from its JWKS endpoint. */
describe('session JWTs verified through a JWKS endpoint', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = 'idp-key-1';
  let jwks: Server;
  let t: TestApp;
  let userId: string;
  let email: string;

  beforeAll(async () => {
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' };
    jwks = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((ok) => jwks.listen(0, '127.0.0.1', ok));
    const { port } = jwks.address() as { port: number };
    t = await startTestApp({ env: { SESSION_JWT_SECRET: undefined, SESSION_JWT_JWKS_URI: `http://127.0.0.1:${port}/.well-known/jwks.json` } });
    const user = await t.seed.user();
    userId = user.id;
    email = user.email;
  });
  afterAll(async () => {
    await t?.close();
    jwks?.close();
  });

  const sign = (options: jwt.SignOptions, key = privateKey) =>
    jwt.sign({ email }, key, { algorithm: 'RS256', subject: userId, expiresIn: 600, ...options });

  it('accepts an RS256 session whose kid is published', async () => {
    const res = await t.api.get('/me', sign({ keyid: kid }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ user_id: userId, email, org_id: null, scopes: [] });
  });

  it('refuses a token whose kid is not published, or which another key signed', async () => {
    expect((await t.api.get('/me', sign({ keyid: 'unknown-kid' }))).status).toBe(401);
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    expect((await t.api.get('/me', sign({ keyid: kid }, other))).status).toBe(401);
  });

  it('refuses HS256 tokens when no shared secret is configured', async () => {
    const hs = jwt.sign({ email }, 'x'.repeat(48), { algorithm: 'HS256', subject: randomUUID(), expiresIn: 600 });
    const res = await t.api.get('/me', hs);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
