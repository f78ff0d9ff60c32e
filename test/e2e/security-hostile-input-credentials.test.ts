import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isUuid } from '../../src/common/roles.js';
import { NOWHERE } from '../support/factories.js';
import {
  b64,
  expectErrorShape,
  headerText,
  hostileWorld,
  printable,
  RUNS,
  signedJwt,
} from './security-hostile-input.fixtures.js';

/**
 * Property-based hostile input over every endpoint, through raw sockets (so bytes that fetch
 * refuses to send are sent too). Every answer to bad input must be a 4xx with the service's error
 * shape; no answer may be a 5xx or take longer than the per-request timeout (a hang); a refused
 * mint must write nothing; nothing may pollute Object.prototype.
 */
describe('hostile input on every endpoint: credentials and headers', () => {
  const w = hostileWorld();

  it('answers random credentials on every endpoint with 401, naming the invalid token', async () => {
    const token = fc.oneof(
      printable(1, 200),
      printable(0, 80).map((s) => `svc_live_${s}`),
      fc.stringMatching(/^[A-Za-z0-9_-]{0,40}\.[A-Za-z0-9_-]{0,80}\.[A-Za-z0-9_-]{0,60}$/),
      fc
        .tuple(fc.jsonValue(), fc.jsonValue())
        .map(([h, p]) => signedJwt(h, p, 'not-the-secret-0123456789abcdef0123456789')),
      fc.jsonValue().map((p) => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(p)}.`),
      // Correctly signed, but the payload is not a claims object (jsonwebtoken used to throw on null).
      fc.constant(signedJwt({ alg: 'HS256', typ: 'JWT' }, null)),
      fc
        .jsonValue()
        .filter((p) => typeof p !== 'object' || p === null || Array.isArray(p))
        .map((p) => signedJwt({ alg: 'HS256' }, p)),
      fc.constant(w.apiKey.slice(0, -1) + (w.apiKey.endsWith('A') ? 'B' : 'A')),
      fc.constant(`${w.owner.session}x`),
      fc.constant(w.owner.session.split('.').slice(0, 2).join('.') + '.'),
    );
    // RFC 6750: the scheme is case-insensitive and followed by spaces; a tab makes it no bearer credential.
    const scheme = fc.constantFrom('Bearer ', 'bearer ', 'BEARER  ', 'Bearer\t');
    const header = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.tuple(scheme, token).map(([s, tok]) => ({ value: s + tok, given: !s.includes('\t') })),
      },
      {
        weight: 1,
        arbitrary: headerText(120)
          .filter((v) => !/^bearer\s+\S+\s*$/i.test(v.trim()))
          .map((value) => ({ value, given: false })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Token abc', '')
          .map((value) => ({ value, given: false })),
      },
    );
    const call = fc.constantFrom<[string, string, string?]>(
      ['GET', '/me'],
      ['GET', '/usage'],
      ['GET', '/api-keys'],
      ['POST', '/api-keys', JSON.stringify({ org_id: NOWHERE })],
      ['DELETE', `/api-keys/${NOWHERE}`],
    );
    await fc.assert(
      fc.asyncProperty(call, header, async ([method, path, body], auth) => {
        const headers: Array<[string, string]> = [['Authorization', auth.value]];
        if (body) headers.push(['Content-Type', 'application/json']);
        const res = await w.send(method, path, headers, body);
        const context = { method, path, auth: auth.value.slice(0, 120) };
        expectErrorShape(res, context);
        expect(res.status, JSON.stringify(context)).toBe(401);
        const challenge = res.headers['www-authenticate'] ?? '';
        expect(challenge, JSON.stringify(context)).toMatch(/^Bearer\b/);
        if (auth.given) expect(challenge, JSON.stringify(context)).toContain('error="invalid_token"');
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('answers correctly signed session JWTs with bad claims with 401, and good claims with the right principal', async () => {
    const now = Math.floor(Date.now() / 1000);
    const junk = fc.oneof(fc.jsonValue(), fc.constantFrom(null, true, '', '1', [], {}, 1.5));
    const claim = <T>(name: string, good: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown>, absentOk: boolean) =>
      fc.oneof(
        { weight: 1, arbitrary: fc.constant({ name, present: false, ok: absentOk, value: undefined as unknown }) },
        { weight: 4, arbitrary: good.map((value) => ({ name, present: true, ok: true, value: value as unknown })) },
        { weight: 2, arbitrary: bad.map((value) => ({ name, present: true, ok: false, value })) },
      );
    const sub = fc.oneof(
      { weight: 3, arbitrary: fc.constant({ value: w.owner.userId as unknown, ok: true, known: true }) },
      { weight: 1, arbitrary: fc.uuid().map((value) => ({ value: value as unknown, ok: true, known: false })) },
      { weight: 2, arbitrary: junk.filter((v) => !isUuid(v)).map((value) => ({ value, ok: false, known: false })) },
      { weight: 1, arbitrary: fc.constant({ value: undefined as unknown, ok: false, known: false }) },
    );
    const email = claim(
      'email',
      fc.emailAddress(),
      junk.filter((v) => typeof v !== 'string'),
      false,
    );
    // Without iat, a good exp lies within SESSION_MAX_AGE (24 h) from now; further is refused.
    const exp = claim(
      'exp',
      fc.integer({ min: now + 600, max: now + 86_400 - 600 }),
      fc.oneof(
        fc.integer({ min: 0, max: now - 600 }),
        fc.integer({ min: now + 86_400 + 600, max: now + 10 ** 8 }),
        junk.filter((v) => typeof v !== 'number'),
      ),
      false,
    );
    const nbf = claim(
      'nbf',
      fc.integer({ min: 0, max: now - 600 }),
      fc.oneof(
        fc.integer({ min: now + 600, max: now + 10 ** 8 }),
        junk.filter((v) => typeof v !== 'number'),
      ),
      true,
    );
    const org = fc.oneof(
      { weight: 2, arbitrary: fc.constant({ value: undefined as unknown, ok: true, kind: 'none' as const }) },
      { weight: 1, arbitrary: fc.constant({ value: null as unknown, ok: true, kind: 'none' as const }) },
      { weight: 2, arbitrary: fc.constant({ value: w.owner.orgId as unknown, ok: true, kind: 'mine' as const }) },
      {
        weight: 1,
        arbitrary: fc
          .oneof(fc.uuid(), fc.constant(w.foreign.orgId))
          .map((value) => ({ value: value as unknown, ok: true, kind: 'other' as const })),
      },
      {
        weight: 1,
        arbitrary: junk
          .filter((v) => v !== null && !isUuid(v))
          .map((value) => ({ value, ok: false, kind: 'none' as const })),
      },
    );
    const extras = fc.dictionary(
      fc.constantFrom('role', 'scope', 'admin', 'aud', 'iss', 'jti', '__proto__', 'constructor', 'user_id'),
      fc.jsonValue(),
      { maxKeys: 3 },
    );
    const header = fc.record(
      {
        alg: fc.constant('HS256'),
        typ: fc.constantFrom('JWT', undefined, 'at+jwt'),
        kid: fc.option(fc.string()),
        jku: fc.option(fc.webUrl()),
      },
      { requiredKeys: ['alg'] },
    );

    await fc.assert(
      fc.asyncProperty(sub, email, exp, nbf, org, extras, header, async (s, e, x, n, o, more, h) => {
        const payload: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(more))
          Object.defineProperty(payload, k, { value: v, enumerable: true, writable: true, configurable: true });
        if (s.value !== undefined) payload.sub = s.value;
        for (const c of [e, x, n]) if (c.present) payload[c.name] = c.value;
        if (o.value !== undefined) payload.org_id = o.value;
        const token = signedJwt(h, payload);
        const res = await w.send('GET', '/me', [['Authorization', `Bearer ${token}`]]);
        const context = { payload, status: res.status, body: res.text.slice(0, 200) };

        const valid = s.ok && e.ok && x.ok && n.ok && o.ok;
        if (!valid) {
          expectErrorShape(res, context);
          expect(res.status, JSON.stringify(context)).toBe(401);
          expect(res.headers['www-authenticate'], JSON.stringify(context)).toContain('error="invalid_token"');
        } else if (o.kind === 'other' || (o.kind === 'mine' && !s.known)) {
          expectErrorShape(res, context);
          expect(res.status, JSON.stringify(context)).toBe(404);
        } else {
          expect(res.status, JSON.stringify(context)).toBe(200);
          const me = res.body as { user_id: string; org_id: string | null; email: string };
          expect(me.user_id).toBe((s.value as string).toLowerCase());
          expect(me.email).toBe(e.value);
          expect(me.org_id).toBe(s.known ? w.owner.orgId : null);
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('serves a valid key whatever other headers come with it, and refuses oversized headers with 431', async () => {
    const name = fc.oneof(
      fc.constantFrom(
        'x-org-id',
        'x-forwarded-for',
        'forwarded',
        'x-real-ip',
        'accept',
        'accept-encoding',
        'accept-language',
        'cookie',
        'origin',
        'referer',
        'user-agent',
        'if-none-match',
        'range',
        'te',
        'upgrade',
        'via',
        'cache-control',
        'pragma',
        '__proto__',
        'constructor',
        'prototype',
        'x-http-method-override',
        'x-original-url',
        'x-rewrite-url',
      ),
      fc
        .stringMatching(/^[a-z][a-z0-9-]{0,40}$/)
        .filter(
          (n) => !['content-length', 'transfer-encoding', 'host', 'connection', 'expect', 'authorization'].includes(n),
        ),
    );
    const big = fc.option(fc.integer({ min: 1, max: 40_000 }), { freq: 3 });
    const route = fc.constantFrom('/me', '/usage');
    await fc.assert(
      fc.asyncProperty(
        route,
        fc.array(fc.tuple(name, headerText(200)), { maxLength: 12 }),
        big,
        async (path, headers, size) => {
          const all: Array<[string, string]> = [['Authorization', `Bearer ${w.apiKey}`], ...headers];
          if (size) all.push(['X-Padding', 'p'.repeat(size)]);
          const res = await w.send('GET', path, all);
          const bytes = all.reduce((sum, [k, v]) => sum + k.length + v.length + 4, 0);
          const context = {
            path,
            headers: headers.map(([k, v]) => [k, v.slice(0, 40)]),
            size,
            status: res.status,
            body: res.text.slice(0, 200),
          };
          if (bytes > 17_000) {
            expect(res.status, JSON.stringify(context)).toBe(431);
            expectErrorShape(res, context);
          } else if (bytes < 15_000) {
            expect(res.status, JSON.stringify(context)).toBe(200);
          } else {
            expect([200, 431], JSON.stringify(context)).toContain(res.status);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});
