import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isUuid } from '../../src/common/roles.js';
import {
  anyText,
  expectErrorShape,
  hostileWorld,
  printable,
  RUNS,
  wellFormed,
} from './security-hostile-input.fixtures.js';

/**
 * Property-based hostile input over every endpoint, through raw sockets (so bytes that fetch
 * refuses to send are sent too). Every answer to bad input must be a 4xx with the service's error
 * shape; no answer may be a 5xx or take longer than the per-request timeout (a hang); a refused
 * mint must write nothing; nothing may pollute Object.prototype.
 */
describe('hostile input on every endpoint: paths, ids and filters', () => {
  const w = hostileWorld();

  it('answers odd paths and ids on every route with a 4xx and revokes nothing', async () => {
    const segment = fc.oneof(
      fc.constantFrom(
        '%',
        '%zz',
        '%E0%A4%A',
        '..%2f..%2fme',
        '..%2F..%2Fusage',
        '%2e%2e',
        '%2e%2e%2f',
        '%00',
        '\u0000',
        '%u0041',
        'a%00b',
        '%F0%9F%98',
        '..',
        '.',
        '%',
        '%%',
        ' ',
        '\t',
        '%0d%0a',
        'x'.repeat(3000),
        '9'.repeat(3000),
        `${w.foreign.keyId}`,
        `${w.foreign.keyId}%00`,
        `${w.foreign.keyId}/..`,
        `${w.foreign.keyId.toUpperCase()}`,
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
    const revokedBefore = await w.countRevoked();
    await fc.assert(
      fc.asyncProperty(route, segment, async ([method, prefix], seg) => {
        const res = await w.send(method, prefix + seg, [['Authorization', `Bearer ${w.owner.session}`]]);
        expectErrorShape(res, { method, path: (prefix + seg).slice(0, 120) });
      }),
      { numRuns: RUNS * 2 },
    );
    expect(await w.countRevoked()).toBe(revokedBefore);
  });

  it("answers a random ?org_id= filter with 400 unless it is a UUID, and 404 unless it is the caller's org", async () => {
    const value = fc.oneof(
      anyText(60).filter(wellFormed),
      fc.uuid(),
      fc.constantFrom(
        '',
        'null',
        '[]',
        w.owner.orgId.slice(1),
        w.owner.orgId,
        w.owner.orgId.toUpperCase(),
        w.foreign.orgId,
      ),
    );
    const extra = fc.array(
      fc.tuple(
        fc.oneof(fc.constantFrom('__proto__', 'constructor[prototype][polluted]', 'org_id[]'), fc.string()),
        fc.string(),
      ),
      { maxLength: 3 },
    );
    await fc.assert(
      fc.asyncProperty(value, extra, async (v, pairs) => {
        const query = [['org_id', v], ...pairs.filter(([k]) => k !== 'org_id')]
          .map(([k, x]) => `${encodeURIComponent(k)}=${encodeURIComponent(x)}`)
          .join('&');
        const res = await w.send('GET', `/api-keys?${query}`, [['Authorization', `Bearer ${w.owner.session}`]]);
        if (isUuid(v) && v.toLowerCase() === w.owner.orgId) expect(res.status, query).toBe(200);
        else {
          expectErrorShape(res, { query });
          expect(res.status, query).toBe(isUuid(v) ? 404 : 400);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
