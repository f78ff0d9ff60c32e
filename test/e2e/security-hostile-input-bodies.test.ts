import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isUuid } from '../../src/common/roles.js';
import {
  ABSENT,
  anyText,
  BODY_LIMIT,
  expectErrorShape,
  headerText,
  hostileWorld,
  jsonObject,
  RUNS,
  SCOPES,
  type Field,
  validDays,
  validName,
  validScopes,
  wire,
} from './security-hostile-input.fixtures.js';

/**
 * Property-based hostile input over every endpoint, through raw sockets (so bytes that fetch
 * refuses to send are sent too). Every answer to bad input must be a 4xx with the service's error
 * shape; no answer may be a 5xx or take longer than the per-request timeout (a hang); a refused
 * mint must write nothing; nothing may pollute Object.prototype.
 */
describe('hostile input on every endpoint: bodies', () => {
  const w = hostileWorld();

  it('answers every random mint body with 201 exactly when it is valid, else a 4xx that wrote nothing', async () => {
    const field = (valid: fc.Arbitrary<unknown>, junk: fc.Arbitrary<unknown>, isValid: (v: unknown) => boolean) =>
      fc.oneof(
        { weight: 2, arbitrary: fc.constant<Field>(ABSENT) },
        { weight: 4, arbitrary: valid.map((v) => ({ value: wire(v), valid: isValid(wire(v)) }) as Field) },
        { weight: 2, arbitrary: junk.map((v) => ({ value: wire(v), valid: isValid(wire(v)) }) as Field) },
      );
    const orgId = fc.oneof(
      {
        weight: 5,
        arbitrary: fc
          .constantFrom(w.owner.orgId, w.owner.orgId.toUpperCase())
          .map((v) => ({ v, kind: 'mine' as const })),
      },
      {
        weight: 2,
        arbitrary: fc.oneof(fc.constant(w.foreign.orgId), fc.uuid()).map((v) => ({ v, kind: 'not-found' as const })),
      },
      {
        weight: 2,
        arbitrary: fc
          .jsonValue()
          .filter((v) => !isUuid(v))
          .map((v) => ({ v, kind: 'junk' as const })),
      },
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
      fc
        .dictionary(
          fc.oneof(
            fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'id', 'key', 'user_id', 'ORG_ID'),
            fc.string(),
          ),
          fc.jsonValue(),
          { minKeys: 1, maxKeys: 3 },
        )
        .map((d) => Object.entries(d).filter(([k]) => !['org_id', 'name', 'scopes', 'expires_in_days'].includes(k))),
      { nil: [] as Array<[string, unknown]> },
    );

    await fc.assert(
      fc.asyncProperty(orgId, name, scopes, days, extra, async (org, n, s, d, more) => {
        const entries: Array<[string, unknown]> = [];
        if (org.kind !== 'absent') entries.push(['org_id', wire(org.v)]);
        for (const [k, f] of [
          ['name', n],
          ['scopes', s],
          ['expires_in_days', d],
        ] as const) {
          if (f !== ABSENT) entries.push([k, f.value]);
        }
        entries.push(...(more ?? []));
        const body = jsonObject(entries);
        const fieldsValid = [n, s, d].every((f) => f === ABSENT || f.valid) && (more ?? []).length === 0;

        const before = await w.countKeys();
        const res = await w.send(
          'POST',
          '/api-keys',
          [
            ['Authorization', `Bearer ${w.owner.session}`],
            ['Content-Type', 'application/json'],
          ],
          body,
        );
        const after = await w.countKeys();

        const context = {
          body: body.slice(0, 300),
          status: res.status,
          message: (res.body as { message?: string })?.message,
        };
        if (Buffer.byteLength(body) > BODY_LIMIT) expect(res.status, JSON.stringify(context)).toBe(413);
        else if (org.kind === 'junk' || org.kind === 'absent' || !fieldsValid)
          expect(res.status, JSON.stringify(context)).toBe(400);
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
      fc
        .jsonValue()
        .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v))
        .map((v) => JSON.stringify(v)),
      anyText(200),
      fc.constantFrom(
        '',
        '{',
        '{"org_id":',
        'nul\u0000l',
        '\uFEFF{}',
        '[]',
        '{"a":1}{"b":2}',
        '{"org_id":"x",}',
        '1e999',
        '"\\ud800"',
      ),
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
        const before = await w.countKeys();
        const res = await w.send(
          'POST',
          '/api-keys',
          [
            ['Authorization', `Bearer ${w.owner.session}`],
            ['Content-Type', type],
          ],
          text,
        );
        expectErrorShape(res, { text, type });
        expect(await w.countKeys()).toBe(before);
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
      fc.asyncProperty(poison, wrap, async (p, wrapped) => {
        const body = wrapped(p, w.owner.orgId);
        const before = await w.countKeys();
        const res = await w.send(
          'POST',
          '/api-keys',
          [
            ['Authorization', `Bearer ${w.owner.session}`],
            ['Content-Type', 'application/json'],
          ],
          body,
        );
        expect(res.status, body).toBe(400);
        expectErrorShape(res, { body });
        expect(await w.countKeys()).toBe(before);
      }),
      { numRuns: 40 },
    );
    // Query strings and header names try the same.
    await w.send('GET', '/api-keys?__proto__[polluted]=yes&constructor[prototype][polluted]=yes&__proto__=x', [
      ['Authorization', `Bearer ${w.owner.session}`],
    ]);
    await w.send('GET', '/me', [
      ['Authorization', `Bearer ${w.apiKey}`],
      ['__proto__', 'polluted'],
      ['constructor', 'x'],
    ]);

    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
    expect(Object.getOwnPropertyNames(Array.prototype).sort()).toEqual(arrayNames);
  });
});
