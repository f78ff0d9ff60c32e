import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JWKS_UNKNOWN_KID_PER_CLIENT } from '../../src/auth/jwks-key-set.js';
import { TestClock } from '../support/clock.js';
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
    t = await startTestApp({
      env: { SESSION_JWT_SECRET: undefined, SESSION_JWT_JWKS_URI: `http://127.0.0.1:${port}/.well-known/jwks.json` },
    });
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

/**
 * Tokens naming a `kid` the identity provider never published (any signature) must not make the
 * service fetch the JWKS per token, nor ever shut real sessions out: the key set is held, a
 * failed fetch keeps it, and such tokens may cause at most one fetch a minute (the service clock,
 * moved by hand here), a few per client.
 */
describe('a JWKS endpoint under tokens whose kid was never published', () => {
  const clock = new TestClock();
  const first = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const second = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const published = [{ ...first.publicKey.export({ format: 'jwk' }), kid: 'idp-1', use: 'sig', alg: 'RS256' }];
  const idp = { fetches: 0, failing: false };
  let jwks: Server;
  let t: TestApp;
  let user: { id: string; email: string };

  beforeAll(async () => {
    jwks = createServer((_req, res) => {
      idp.fetches++;
      if (idp.failing) {
        res.statusCode = 503;
        return res.end();
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((ok) => jwks.listen(0, '127.0.0.1', ok));
    const { port } = jwks.address() as { port: number };
    t = await startTestApp({
      clock,
      // Clients are told apart by X-Forwarded-For from the (trusted) loopback peer.
      env: {
        SESSION_JWT_SECRET: undefined,
        SESSION_JWT_JWKS_URI: `http://127.0.0.1:${port}/jwks.json`,
        TRUST_PROXY: '127.0.0.1',
      },
    });
    user = await t.seed.user();
  });
  afterAll(async () => {
    await t?.close();
    jwks?.close();
  });

  const session = (kid = 'idp-1', key = first.privateKey) =>
    jwt.sign({ email: user.email }, key, { algorithm: 'RS256', keyid: kid, subject: user.id, expiresIn: 600 });
  const randomKid = () => session(randomUUID(), second.privateKey);
  const from = (client: string) => ({ 'x-forwarded-for': client });
  const aMinuteLater = () => clock.advance(61_000);

  it('keeps answering real sessions while many random-kid tokens arrive, with at most one fetch for all of them', async () => {
    expect((await t.api.get('/me', session())).status).toBe(200);
    const before = idp.fetches;
    for (let round = 0; round < 10; round++) {
      const forged = Array.from({ length: 20 }, (_, i) => t.api.get('/me', randomKid(), from(`203.0.113.${i + 1}`)));
      const real = t.api.get('/me', session(), from('198.51.100.1'));
      expect((await Promise.all(forged)).map((r) => r.status)).toEqual(Array(20).fill(401));
      expect((await real).status).toBe(200);
    }
    expect(idp.fetches - before).toBeLessThanOrEqual(1);
  });

  it('keeps the last good key set when a fetch fails', async () => {
    idp.failing = true;
    aMinuteLater();
    const before = idp.fetches;
    expect((await t.api.get('/me', randomKid(), from('203.0.113.50'))).status).toBe(401);
    expect(idp.fetches - before).toBe(1);
    expect((await t.api.get('/me', session())).status).toBe(200);
    idp.failing = false;
  });

  it('picks up a key the provider rotated in on first sight, and a kid a fresh set lacks causes no second fetch', async () => {
    published.push({ ...second.publicKey.export({ format: 'jwk' }), kid: 'idp-2', use: 'sig', alg: 'RS256' });
    aMinuteLater();
    expect((await t.api.get('/me', session('idp-2', second.privateKey), from('198.51.100.2'))).status).toBe(200);

    const absent = session('never-published', second.privateKey);
    aMinuteLater();
    const before = idp.fetches;
    expect((await t.api.get('/me', absent, from('198.51.100.3'))).status).toBe(401);
    aMinuteLater();
    expect((await t.api.get('/me', absent, from('198.51.100.4'))).status).toBe(401);
    expect(idp.fetches - before).toBe(1);
  });

  it('lets one client cause a fetch only a few times a minute, whatever the service clock says', async () => {
    const before = idp.fetches;
    for (let i = 0; i < 12; i++) {
      aMinuteLater();
      expect((await t.api.get('/me', randomKid(), from('192.0.2.7'))).status).toBe(401);
    }
    expect(idp.fetches - before).toBe(JWKS_UNKNOWN_KID_PER_CLIENT);
    aMinuteLater();
    expect((await t.api.get('/me', randomKid(), from('192.0.2.8'))).status).toBe(401);
    expect(idp.fetches - before).toBe(JWKS_UNKNOWN_KID_PER_CLIENT + 1);
  });
});
