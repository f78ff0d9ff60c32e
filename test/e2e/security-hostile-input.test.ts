import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUuid } from '../../src/common/roles.js';
import { rawRequest, type RawResponse } from '../support/raw-http.js';
import { TEST_SESSION_SECRET } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Property-based hostile input over every endpoint, through raw sockets (so bytes that fetch
 * refuses to send are sent too). Every answer to bad input must be a 4xx with the service's error
 * shape; no answer may be a 5xx or take longer than the per-request timeout (a hang); a refused
 * mint must write nothing; nothing may pollute Object.prototype.
 */
const RUNS = 150;
const TIMEOUT_MS = 5_000;
const SCOPES = ['decisions:read', 'decisions:write'];
const BODY_LIMIT = 16 * 1024;

function expectErrorShape(res: RawResponse, context: unknown): void {
  const where = JSON.stringify(context)?.slice(0, 300);
  expect(res.status, where).toBeGreaterThanOrEqual(400);
  expect(res.status, where).toBeLessThan(500);
  expect(res.headers['x-content-type-options'], where).toBe('nosniff');
  expect(res.headers['x-powered-by'], where).toBeUndefined();
  const body = res.body as Record<string, unknown>;
  expect(Object.keys(body ?? {}).sort(), `${where} → ${res.text.slice(0, 200)}`).toEqual(['error', 'message', 'statusCode']);
  expect(body.statusCode, where).toBe(res.status);
  expect(typeof body.error === 'string' && body.error.length > 0, where).toBe(true);
  expect(typeof body.message === 'string' && body.message.length > 0, where).toBe(true);
}

/** A JSON text built field by field, so keys such as `__proto__` are written as keys. */
function jsonObject(entries: Array<[string, unknown]>): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v) ?? 'null').toString('base64url');
/** An HS256 JWT over any JSON header and payload, signed with the right secret. */
function signedJwt(header: unknown, payload: unknown, secret = TEST_SESSION_SECRET): string {
  const data = `${b64(header)}.${b64(payload)}`;
  return `${data}.${createHmac('sha256', secret).update(data).digest('base64url')}`;
}

/** A body field left out. */
const ABSENT = null;
type Field = { value: unknown; valid: boolean } | typeof ABSENT;

const wellFormed = (s: string) => !/\p{Cs}/u.test(s);
const validName = (v: unknown) => typeof v === 'string' && v.length <= 100 && !/[\0\p{Cs}]/u.test(v);
const validScopes = (v: unknown) => Array.isArray(v) && v.every((s) => SCOPES.includes(s as string));
const validDays = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 366;
/** What the server sees after JSON round-trip (NaN → null, -0 → 0). */
const wire = (v: unknown): unknown => JSON.parse(JSON.stringify(v) ?? 'null');

/** A string fast-check may fill with any code point, NUL and lone surrogates included. */
const anyText = (maxLength: number) => fc.string({ unit: 'binary', maxLength });
const printable = (minLength: number, maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength, maxLength });
/** Header-safe text: any byte but CR, LF and NUL (Node refuses those before the app sees them). */
const headerText = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c)), maxLength });

describe('hostile input on every endpoint', () => {
  let t: TestApp;
  let owner: { orgId: string; userId: string; session: string };
  let foreign: { orgId: string; keyId: string };
  let apiKey: string;

  const send = (method: string, path: string, headers: Array<[string, string]> = [], body?: string) =>
    rawRequest(t.url, { method, path, headers, body }, TIMEOUT_MS);
  const countKeys = async () => (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;
  const countRevoked = async () =>
    (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NOT NULL')).rows[0].n;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.seed.world('owner');
    const other = await t.seed.world('owner');
    const otherKey = await t.api.post('/api-keys', other.session, { org_id: other.orgId });
    foreign = { orgId: other.orgId, keyId: otherKey.body.id };
    apiKey = (await t.api.post('/api-keys', owner.session, { org_id: owner.orgId })).body.key;
  });
  afterAll(async () => t?.close());

  it('answers every random mint body with 201 exactly when it is valid, else a 4xx that wrote nothing', async () => {
    const field = (valid: fc.Arbitrary<unknown>, junk: fc.Arbitrary<unknown>, isValid: (v: unknown) => boolean) =>
      fc.oneof(
        { weight: 2, arbitrary: fc.constant<Field>(ABSENT) },
        { weight: 4, arbitrary: valid.map((v) => ({ value: wire(v), valid: isValid(wire(v)) }) as Field) },
        { weight: 2, arbitrary: junk.map((v) => ({ value: wire(v), valid: isValid(wire(v)) }) as Field) },
      );
    const orgId = fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(owner.orgId, owner.orgId.toUpperCase()).map((v) => ({ v, kind: 'mine' as const })) },
      { weight: 2, arbitrary: fc.oneof(fc.constant(foreign.orgId), fc.uuid()).map((v) => ({ v, kind: 'not-found' as const })) },
      { weight: 2, arbitrary: fc.jsonValue().filter((v) => !isUuid(v)).map((v) => ({ v, kind: 'junk' as const })) },
      { weight: 1, arbitrary: fc.constant({ v: undefined, kind: 'absent' as const }) },
    );
    const name = field(anyText(110), fc.oneof(fc.jsonValue(), anyText(300)), validName);
    const scopes = field(
      fc.array(fc.constantFrom(...SCOPES), { maxLength: 4 }),
      fc.oneof(fc.jsonValue(), fc.array(fc.oneof(fc.constantFrom(...SCOPES), fc.jsonValue()), { maxLength: 4 })),
      validScopes,
    );
    const days = field(
      fc.integer({ min: 0, max: 366 }),
      fc.oneof(fc.integer(), fc.double(), fc.jsonValue(), fc.constantFrom(-1, 367, 1.5, '30', null, true)),
      validDays,
    );
    const extra = fc.option(
      fc.dictionary(
        fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'id', 'key', 'user_id', 'ORG_ID'), fc.string()),
        fc.jsonValue(),
        { minKeys: 1, maxKeys: 3 },
      ).map((d) => Object.entries(d).filter(([k]) => !['org_id', 'name', 'scopes', 'expires_in_days'].includes(k))),
      { nil: [] as Array<[string, unknown]> },
    );

    await fc.assert(
      fc.asyncProperty(orgId, name, scopes, days, extra, async (org, n, s, d, more) => {
        const entries: Array<[string, unknown]> = [];
        if (org.kind !== 'absent') entries.push(['org_id', wire(org.v)]);
        for (const [k, f] of [['name', n], ['scopes', s], ['expires_in_days', d]] as const) {
          if (f !== ABSENT) entries.push([k, f.value]);
        }
        entries.push(...(more ?? []));
        const body = jsonObject(entries);
        const fieldsValid = [n, s, d].every((f) => f === ABSENT || f.valid) && (more ?? []).length === 0;

        const before = await countKeys();
        const res = await send('POST', '/api-keys', [['Authorization', `Bearer ${owner.session}`], ['Content-Type', 'application/json']], body);
        const after = await countKeys();

        const context = { body: body.slice(0, 300), status: res.status, message: (res.body as { message?: string })?.message };
        if (Buffer.byteLength(body) > BODY_LIMIT) expect(res.status, JSON.stringify(context)).toBe(413);
        else if (org.kind === 'junk' || org.kind === 'absent' || !fieldsValid) expect(res.status, JSON.stringify(context)).toBe(400);
        else if (org.kind === 'not-found') expect(res.status, JSON.stringify(context)).toBe(404);
        else expect(res.status, JSON.stringify(context)).toBe(201);

        if (res.status === 201) {
          expect(after).toBe(before + 1);
          const record = res.body as { name: string; scopes: string[]; key: string; expires_at?: string };
          expect(record.key).toMatch(/^svc_live_[A-Za-z0-9_]+$/);
          expect(record.name).toBe(n === ABSENT ? '' : n.value);
          const asked = s === ABSENT || (s.value as string[]).length === 0 ? ['decisions:read'] : (s.value as string[]);
          expect(record.scopes).toEqual(SCOPES.filter((x) => asked.includes(x)));
          expect(record.expires_at !== undefined).toBe(d !== ABSENT && (d.value as number) > 0);
        } else {
          expectErrorShape(res, context);
          expect(after, 'a refused mint wrote nothing').toBe(before);
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('answers any non-object body, malformed JSON or foreign content type with a 4xx that wrote nothing', async () => {
    const body = fc.oneof(
      fc.jsonValue().filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)).map((v) => JSON.stringify(v)),
      anyText(200),
      fc.constantFrom('', '{', '{"org_id":', 'nul\u0000l', '\uFEFF{}', '[]', '{"a":1}{"b":2}', '{"org_id":"x",}', '1e999', '"\\ud800"'),
    );
    const contentType = fc.oneof(
      { weight: 4, arbitrary: fc.constant('application/json') },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/json; charset=latin1',
          'application/problem+json',
          'application/json, text/plain',
          '',
          '*/*',
        ),
      },
      { weight: 1, arbitrary: headerText(60) },
    );
    await fc.assert(
      fc.asyncProperty(body, contentType, async (text, type) => {
        const before = await countKeys();
        const res = await send('POST', '/api-keys', [['Authorization', `Bearer ${owner.session}`], ['Content-Type', type]], text);
        expectErrorShape(res, { text, type });
        expect(await countKeys()).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers odd paths and ids on every route with a 4xx and revokes nothing', async () => {
    const segment = fc.oneof(
      fc.constantFrom(
        '%', '%zz', '%E0%A4%A', '..%2f..%2fme', '..%2F..%2Fusage', '%2e%2e', '%2e%2e%2f', '%00', '\u0000', '%u0041', 'a%00b',
        '%F0%9F%98', '..', '.', '%', '%%', ' ', '\t', '%0d%0a', 'x'.repeat(3000), '9'.repeat(3000),
        `${foreign.keyId}`, `${foreign.keyId}%00`, `${foreign.keyId}/..`, `${foreign.keyId.toUpperCase()}`,
      ),
      fc.uuid(),
      printable(0, 60),
      anyText(40).map((s) => (wellFormed(s) ? encodeURIComponent(s) : s)),
      fc.integer({ min: 101, max: 3000 }).map((n) => 'a'.repeat(n)),
    );
    const route = fc.constantFrom(
      ['DELETE', '/api-keys/'],
      ['GET', '/api-keys/'],
      ['POST', '/api-keys/'],
      ['GET', '/me/'],
      ['GET', '/usage/'],
      ['GET', '/nope/'],
      ['DELETE', '//api-keys/'],
      ['PUT', '/api-keys/'],
      ['PATCH', '/me/'],
      ['OPTIONS', '/api-keys/'],
    );
    const revokedBefore = await countRevoked();
    await fc.assert(
      fc.asyncProperty(route, segment, async ([method, prefix], seg) => {
        const res = await send(method, prefix + seg, [['Authorization', `Bearer ${owner.session}`]]);
        expectErrorShape(res, { method, path: (prefix + seg).slice(0, 120) });
      }),
      { numRuns: RUNS * 2 },
    );
    expect(await countRevoked()).toBe(revokedBefore);
  });

  it('answers a random ?org_id= filter with 400 unless it is a UUID, and 404 unless it is the caller\'s org', async () => {
    const value = fc.oneof(anyText(60).filter(wellFormed), fc.uuid(), fc.constantFrom('', 'null', '[]', owner.orgId.slice(1), owner.orgId, owner.orgId.toUpperCase(), foreign.orgId));
    const extra = fc.array(fc.tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor[prototype][polluted]', 'org_id[]'), fc.string()), fc.string()), { maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(value, extra, async (v, pairs) => {
        const query = [['org_id', v], ...pairs.filter(([k]) => k !== 'org_id')].map(([k, x]) => `${encodeURIComponent(k)}=${encodeURIComponent(x)}`).join('&');
        const res = await send('GET', `/api-keys?${query}`, [['Authorization', `Bearer ${owner.session}`]]);
        if (isUuid(v) && v.toLowerCase() === owner.orgId) expect(res.status, query).toBe(200);
        else {
          expectErrorShape(res, { query });
          expect(res.status, query).toBe(isUuid(v) ? 404 : 400);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('answers random credentials on every endpoint with 401, naming the invalid token', async () => {
    const token = fc.oneof(
      printable(1, 200),
      printable(0, 80).map((s) => `svc_live_${s}`),
      fc.stringMatching(/^[A-Za-z0-9_-]{0,40}\.[A-Za-z0-9_-]{0,80}\.[A-Za-z0-9_-]{0,60}$/),
      fc.tuple(fc.jsonValue(), fc.jsonValue()).map(([h, p]) => signedJwt(h, p, 'not-the-secret-0123456789abcdef0123456789')),
      fc.jsonValue().map((p) => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(p)}.`),
      // Correctly signed, but the payload is not a claims object (jsonwebtoken used to throw on null).
      fc.constant(signedJwt({ alg: 'HS256', typ: 'JWT' }, null)),
      fc.jsonValue().filter((p) => typeof p !== 'object' || p === null || Array.isArray(p)).map((p) => signedJwt({ alg: 'HS256' }, p)),
      fc.constant(apiKey.slice(0, -1) + (apiKey.endsWith('A') ? 'B' : 'A')),
      fc.constant(`${owner.session}x`),
      fc.constant(owner.session.split('.').slice(0, 2).join('.') + '.'),
    );
    // RFC 6750: the scheme is case-insensitive and followed by spaces; a tab makes it no bearer credential.
    const scheme = fc.constantFrom('Bearer ', 'bearer ', 'BEARER  ', 'Bearer\t');
    const header = fc.oneof(
      { weight: 4, arbitrary: fc.tuple(scheme, token).map(([s, tok]) => ({ value: s + tok, given: !s.includes('\t') })) },
      { weight: 1, arbitrary: headerText(120).filter((v) => !/^bearer\s+\S+\s*$/i.test(v.trim())).map((value) => ({ value, given: false })) },
      { weight: 1, arbitrary: fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Token abc', '').map((value) => ({ value, given: false })) },
    );
    const call = fc.constantFrom<[string, string, string?]>(
      ['GET', '/me'],
      ['GET', '/usage'],
      ['GET', '/api-keys'],
      ['POST', '/api-keys', JSON.stringify({ org_id: '00000000-0000-4000-8000-000000000000' })],
      ['DELETE', `/api-keys/${'00000000-0000-4000-8000-000000000000'}`],
    );
    await fc.assert(
      fc.asyncProperty(call, header, async ([method, path, body], auth) => {
        const headers: Array<[string, string]> = [['Authorization', auth.value]];
        if (body) headers.push(['Content-Type', 'application/json']);
        const res = await send(method, path, headers, body);
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
      { weight: 3, arbitrary: fc.constant({ value: owner.userId as unknown, ok: true, known: true }) },
      { weight: 1, arbitrary: fc.uuid().map((value) => ({ value: value as unknown, ok: true, known: false })) },
      { weight: 2, arbitrary: junk.filter((v) => !isUuid(v)).map((value) => ({ value, ok: false, known: false })) },
      { weight: 1, arbitrary: fc.constant({ value: undefined as unknown, ok: false, known: false }) },
    );
    const email = claim('email', fc.emailAddress(), junk.filter((v) => typeof v !== 'string'), false);
    // Without iat, a good exp lies within SESSION_MAX_AGE (24 h) from now; further is refused.
    const exp = claim(
      'exp',
      fc.integer({ min: now + 600, max: now + 86_400 - 600 }),
      fc.oneof(fc.integer({ min: 0, max: now - 600 }), fc.integer({ min: now + 86_400 + 600, max: now + 10 ** 8 }), junk.filter((v) => typeof v !== 'number')),
      false,
    );
    const nbf = claim('nbf', fc.integer({ min: 0, max: now - 600 }), fc.oneof(fc.integer({ min: now + 600, max: now + 10 ** 8 }), junk.filter((v) => typeof v !== 'number')), true);
    const org = fc.oneof(
      { weight: 2, arbitrary: fc.constant({ value: undefined as unknown, ok: true, kind: 'none' as const }) },
      { weight: 1, arbitrary: fc.constant({ value: null as unknown, ok: true, kind: 'none' as const }) },
      { weight: 2, arbitrary: fc.constant({ value: owner.orgId as unknown, ok: true, kind: 'mine' as const }) },
      { weight: 1, arbitrary: fc.oneof(fc.uuid(), fc.constant(foreign.orgId)).map((value) => ({ value: value as unknown, ok: true, kind: 'other' as const })) },
      { weight: 1, arbitrary: junk.filter((v) => v !== null && !isUuid(v)).map((value) => ({ value, ok: false, kind: 'none' as const })) },
    );
    const extras = fc.dictionary(fc.constantFrom('role', 'scope', 'admin', 'aud', 'iss', 'jti', '__proto__', 'constructor', 'user_id'), fc.jsonValue(), { maxKeys: 3 });
    const header = fc.record({ alg: fc.constant('HS256'), typ: fc.constantFrom('JWT', undefined, 'at+jwt'), kid: fc.option(fc.string()), jku: fc.option(fc.webUrl()) }, { requiredKeys: ['alg'] });

    await fc.assert(
      fc.asyncProperty(sub, email, exp, nbf, org, extras, header, async (s, e, x, n, o, more, h) => {
        const payload: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(more)) Object.defineProperty(payload, k, { value: v, enumerable: true, writable: true, configurable: true });
        if (s.value !== undefined) payload.sub = s.value;
        for (const c of [e, x, n]) if (c.present) payload[c.name] = c.value;
        if (o.value !== undefined) payload.org_id = o.value;
        const token = signedJwt(h, payload);
        const res = await send('GET', '/me', [['Authorization', `Bearer ${token}`]]);
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
          expect(me.org_id).toBe(s.known ? owner.orgId : null);
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('serves a valid key whatever other headers come with it, and refuses oversized headers with 431', async () => {
    const name = fc.oneof(
      fc.constantFrom(
        'x-org-id', 'x-forwarded-for', 'forwarded', 'x-real-ip', 'accept', 'accept-encoding', 'accept-language', 'cookie',
        'origin', 'referer', 'user-agent', 'if-none-match', 'range', 'te', 'upgrade', 'via', 'cache-control', 'pragma',
        '__proto__', 'constructor', 'prototype', 'x-http-method-override', 'x-original-url', 'x-rewrite-url',
      ),
      fc.stringMatching(/^[a-z][a-z0-9-]{0,40}$/).filter((n) => !['content-length', 'transfer-encoding', 'host', 'connection', 'expect', 'authorization'].includes(n)),
    );
    const big = fc.option(fc.integer({ min: 1, max: 40_000 }), { freq: 3 });
    const route = fc.constantFrom('/me', '/usage');
    await fc.assert(
      fc.asyncProperty(route, fc.array(fc.tuple(name, headerText(200)), { maxLength: 12 }), big, async (path, headers, size) => {
        const all: Array<[string, string]> = [['Authorization', `Bearer ${apiKey}`], ...headers];
        if (size) all.push(['X-Padding', 'p'.repeat(size)]);
        const res = await send('GET', path, all);
        const bytes = all.reduce((sum, [k, v]) => sum + k.length + v.length + 4, 0);
        const context = { path, headers: headers.map(([k, v]) => [k, v.slice(0, 40)]), size, status: res.status, body: res.text.slice(0, 200) };
        if (bytes > 17_000) {
          expect(res.status, JSON.stringify(context)).toBe(431);
          expectErrorShape(res, context);
        } else if (bytes < 15_000) {
          expect(res.status, JSON.stringify(context)).toBe(200);
        } else {
          expect([200, 431], JSON.stringify(context)).toContain(res.status);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses __proto__ and constructor.prototype anywhere in a body with 400 and leaves Object.prototype untouched', async () => {
    const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();
    const arrayNames = Object.getOwnPropertyNames(Array.prototype).sort();
    const poison = fc.constantFrom(
      '{"__proto__":{"polluted":"yes"}}',
      '{"constructor":{"prototype":{"polluted":"yes"}}}',
      '{"__proto__":{"isAdmin":true,"scopes":["decisions:write"]}}',
    );
    const wrap = fc.constantFrom<(p: string, org: string) => string>(
      (p, org) => `{"org_id":"${org}",${p.slice(1)}`,
      (p, org) => `{"org_id":"${org}","name":${p}}`,
      (p, org) => `{"org_id":"${org}","scopes":[${p}]}`,
      (p, org) => `{"org_id":"${org}","expires_in_days":${p}}`,
      (p, org) => `{"org_id":"${org}","x":{"y":[1,${p}]}}`,
      (p) => p,
    );
    await fc.assert(
      fc.asyncProperty(poison, wrap, async (p, w) => {
        const body = w(p, owner.orgId);
        const before = await countKeys();
        const res = await send('POST', '/api-keys', [['Authorization', `Bearer ${owner.session}`], ['Content-Type', 'application/json']], body);
        expect(res.status, body).toBe(400);
        expectErrorShape(res, { body });
        expect(await countKeys()).toBe(before);
      }),
      { numRuns: 40 },
    );
    // Query strings and header names try the same.
    await send('GET', '/api-keys?__proto__[polluted]=yes&constructor[prototype][polluted]=yes&__proto__=x', [['Authorization', `Bearer ${owner.session}`]]);
    await send('GET', '/me', [['Authorization', `Bearer ${apiKey}`], ['__proto__', 'polluted'], ['constructor', 'x']]);

    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
    expect(Object.getOwnPropertyNames(Array.prototype).sort()).toEqual(arrayNames);
  });
});

describe('the 16 KiB body limit', () => {
  let t: TestApp;
  let owner: { orgId: string; session: string };
  const countKeys = async () => (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;
  const TOO_LARGE = { statusCode: 413, error: 'Payload Too Large', message: 'The request body is too large (limit 16 KiB)' };

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.seed.world('owner');
  });
  afterAll(async () => t?.close());

  /** A valid-JSON mint body of exactly `size` bytes (its name is far too long, which only a parse can tell). */
  const bodyOfSize = (orgId: string, size: number) => {
    const shell = JSON.stringify({ org_id: orgId, name: '' });
    return JSON.stringify({ org_id: orgId, name: 'n'.repeat(size - shell.length) });
  };
  const post = (body: string, headers: Array<[string, string]> = []) =>
    rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [['Authorization', `Bearer ${owner.session}`], ['Content-Type', 'application/json'], ...headers], body }, TIMEOUT_MS);

  it('parses a body of exactly 16384 bytes (and refuses its over-long name with 400)', async () => {
    const body = bodyOfSize(owner.orgId, BODY_LIMIT);
    expect(Buffer.byteLength(body)).toBe(BODY_LIMIT);
    const res = await post(body);
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toBe('name must be at most 100 characters');
  });

  it('answers 413 with the standard error body to a body one byte over the limit, and writes nothing', async () => {
    const before = await countKeys();
    const res = await post(bodyOfSize(owner.orgId, BODY_LIMIT + 1));
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(await countKeys()).toBe(before);
  });

  it('answers 413, not 400, to an oversized body that is not even JSON: the limit applies before parsing', async () => {
    const res = await post('{'.repeat(BODY_LIMIT + 100));
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });

  it('answers 413 at once when Content-Length announces too much, without waiting for the body', async () => {
    const res = await rawRequest(
      t.url,
      { method: 'POST', path: '/api-keys', headers: [['Authorization', `Bearer ${owner.session}`], ['Content-Type', 'application/json'], ['Content-Length', '10000000']] },
      TIMEOUT_MS,
    );
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });

  it('answers 413 to a chunked body that grows past the limit', async () => {
    const chunk = 'a'.repeat(4096);
    const chunked = `${Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('')}0\r\n\r\n`;
    const res = await post(chunked, [['Transfer-Encoding', 'chunked']]);
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });

  it('answers 413 before authentication, so an anonymous client cannot make the server buffer a large body', async () => {
    const res = await rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [['Content-Type', 'application/json']], body: 'x'.repeat(BODY_LIMIT * 4) }, TIMEOUT_MS);
    expect(res.status).toBe(413);
    expect(res.body).toEqual(TOO_LARGE);
  });
});
