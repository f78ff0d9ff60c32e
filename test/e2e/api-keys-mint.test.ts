import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthMetrics } from '../../src/auth/auth-metrics.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import {
  expect400,
  KEY_SHAPE,
  listKeys,
  mintOk,
  NOWHERE,
  READ,
  RFC3339,
  UUID_SHAPE,
  withOneCharChanged,
  WRITE,
} from './api-keys.fixtures.js';

const DAY_MS = 86_400_000;

describe('POST /api-keys: mint', () => {
  let t: TestApp;
  // Far from the wall clock, so a timestamp taken from anything but the injected clock shows.
  const clock = new TestClock('2031-05-17T08:30:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  describe('201', () => {
    it('returns the full record (key, id, org_id, name, lookup, last4, scopes, created_at) and no field that does not apply yet', async () => {
      const w = await t.seed.world('owner');
      const res = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'ci deploy' });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual([
        'created_at',
        'id',
        'key',
        'last4',
        'lookup',
        'name',
        'org_id',
        'scopes',
      ]);
      expect(res.body).toMatchObject({ org_id: w.orgId, name: 'ci deploy', scopes: [READ] });
      expect(res.body.id).toMatch(UUID_SHAPE);
      expect(res.body.created_at).toMatch(RFC3339);
      expect(res.body.created_at).toBe(clock.now().toISOString());
      expect(res.body).not.toHaveProperty('expires_at');
      expect(res.body).not.toHaveProperty('last_used_at');
      expect(res.body).not.toHaveProperty('revoked_at');
      expect(res.headers.get('cache-control')).toBe('no-store');
    });

    it('adds expires_at exactly expires_in_days after created_at when expires_in_days is above 0', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId, expires_in_days: 30 });
      expect(body.expires_at).toMatch(RFC3339);
      expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(30 * DAY_MS);
    });

    it('accepts expires_in_days 366, the upper bound', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId, expires_in_days: 366 });
      expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(366 * DAY_MS);
    });

    it('treats expires_in_days 0 as never: the record has no expires_at', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId, expires_in_days: 0 });
      expect(body).not.toHaveProperty('expires_at');
    });

    it('defaults name to "" and stores a name exactly as given, spaces included', async () => {
      const w = await t.seed.world('owner');
      const unnamed = await mintOk(t, w.session, { org_id: w.orgId });
      expect(unnamed.name).toBe('');
      const spaced = await mintOk(t, w.session, { org_id: w.orgId, name: '  padded  ' });
      expect(spaced.name).toBe('  padded  ');
      const listed = await listKeys(t, w.session);
      expect(listed.map((k) => k.name).sort()).toEqual(['', '  padded  ']);
    });

    it('keeps a name in any script, with emoji, exactly as given', async () => {
      const w = await t.seed.world('owner');
      const name = 'ключ 🔑 名前 — ci\t"quoted"';
      expect((await mintOk(t, w.session, { org_id: w.orgId, name })).name).toBe(name);
      expect((await listKeys(t, w.session))[0].name).toBe(name);
    });

    it('accepts a name of exactly 100 characters, an emoji counting as two', async () => {
      const w = await t.seed.world('owner');
      const hundred = 'n'.repeat(100);
      expect((await mintOk(t, w.session, { org_id: w.orgId, name: hundred })).name).toBe(hundred);
      const withEmoji = `${'n'.repeat(98)}🔑`;
      expect(withEmoji.length).toBe(100);
      expect((await mintOk(t, w.session, { org_id: w.orgId, name: withEmoji })).name).toBe(withEmoji);
    });

    it('accepts an org_id written in upper case and binds the key to that org', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId.toUpperCase() });
      expect(body.org_id).toBe(w.orgId);
      expect((await t.api.get('/me', body.key)).body.org_id).toBe(w.orgId);
    });
  });

  describe('scopes', () => {
    it('makes a key read-only when scopes are omitted', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId });
      expect(body.scopes).toEqual([READ]);
      expect((await t.api.get('/me', body.key)).body.scopes).toEqual([READ]);
    });

    it('treats scopes [] like omitted scopes: read-only', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId, scopes: [] });
      expect(body.scopes).toEqual([READ]);
      expect((await t.api.get('/me', body.key)).body.scopes).toEqual([READ]);
    });

    it('removes duplicate scopes', async () => {
      const w = await t.seed.world('owner');
      const both = await mintOk(t, w.session, { org_id: w.orgId, scopes: [WRITE, READ, WRITE, READ] });
      expect([...both.scopes].sort()).toEqual([READ, WRITE]);
      expect(both.scopes).toHaveLength(2);
      const writeOnly = await mintOk(t, w.session, { org_id: w.orgId, scopes: [WRITE, WRITE] });
      expect(writeOnly.scopes).toEqual([WRITE]);
      expect((await t.api.get('/me', writeOnly.key)).body.scopes).toEqual([WRITE]);
    });

    it('gives the key exactly the scopes it was minted with', async () => {
      const w = await t.seed.world('member');
      const body = await mintOk(t, w.session, { org_id: w.orgId, scopes: [READ, WRITE] });
      expect([...body.scopes].sort()).toEqual([READ, WRITE]);
      expect([...(await t.api.get('/me', body.key)).body.scopes].sort()).toEqual([READ, WRITE]);
    });
  });

  describe('key format', () => {
    it('is svc_live_ followed only by [A-Za-z0-9_], with the lookup inside it and last4 its last four characters', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId });
      expect(body.key).toMatch(KEY_SHAPE);
      expect(body.key.startsWith('svc_live_')).toBe(true);
      expect(body.lookup.length).toBeGreaterThan(0);
      expect(body.key.slice('svc_live_'.length)).toContain(body.lookup);
      expect(body.last4).toHaveLength(4);
      expect(body.last4).toBe(body.key.slice(-4));
    });

    it('carries a secret of at least 128 bits beyond the lookup and the checksum', async () => {
      const w = await t.seed.world('owner');
      const body = await mintOk(t, w.session, { org_id: w.orgId });
      const afterLookup = body.key.slice(body.key.indexOf(body.lookup) + body.lookup.length);
      // Base62 carries log2(62) bits per character; 6 characters are the checksum, one a separator.
      expect((afterLookup.length - 7) * Math.log2(62)).toBeGreaterThanOrEqual(128);
    });

    it('refuses the key with any one character changed (401), before looking it up', async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.get('/me', key)).status).toBe(200);
      const metrics = t.app.get(AuthMetrics);
      for (const index of [key.length - 1, key.length - 10, 'svc_live_'.length + 2]) {
        const before = metrics.counts.malformed;
        const res = await t.api.get('/me', withOneCharChanged(key, index));
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
        expect(metrics.counts.malformed).toBe(before + 1);
      }
    });

    it('refuses a key with a valid checksum whose secret was never minted (401)', async () => {
      const w = await t.seed.world('owner');
      const { key, lookup } = await mintOk(t, w.session, { org_id: w.orgId });
      // Same lookup, another secret, a correct CRC32 checksum: only the stored HMAC can tell it apart.
      const body = key.slice(0, -6);
      const forgedBody = body.slice(0, -1) + (body.endsWith('a') ? 'b' : 'a');
      const forged = forgedBody + base62Checksum(forgedBody);
      expect(forged).toContain(lookup);
      const unknownBefore = t.app.get(AuthMetrics).counts.unknown;
      expect((await t.api.get('/me', forged)).status).toBe(401);
      expect(t.app.get(AuthMetrics).counts.unknown).toBe(unknownBefore + 1);
      expect((await t.api.get('/me', key)).status).toBe(200);
    });
  });

  describe('400: invalid input names the field and the rule', () => {
    let w: Awaited<ReturnType<TestApp['seed']['world']>>;
    beforeAll(async () => {
      w = await t.seed.world('owner');
    });

    it('refuses a body without org_id', async () => {
      expect400(await t.api.post('/api-keys', w.session, { name: 'x' }), /org_id/, /required/);
    });

    it.each([['not-a-uuid'], [''], [42], ['0b9e4a7e-3c55-4c1e-9d9a-5b8f1e2d7c6']])(
      'refuses org_id %j, which is not a UUID',
      async (orgId) => {
        expect400(await t.api.post('/api-keys', w.session, { org_id: orgId }), /org_id/, /UUID/);
      },
    );

    it('refuses a name of 101 characters', async () => {
      expect400(
        await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'n'.repeat(101) }),
        /name/,
        /at most 100 characters/,
      );
    });

    it('refuses a 100-character-looking name whose emoji makes it 101 JavaScript characters', async () => {
      const name = `${'n'.repeat(99)}🔑`;
      expect([...name]).toHaveLength(100);
      expect400(await t.api.post('/api-keys', w.session, { org_id: w.orgId, name }), /name/, /at most 100 characters/);
    });

    it.each([['a\u0000b'], ['\ud800x'], ['x\udfff']])(
      'refuses name %j, which PostgreSQL could not store as given, instead of failing with a 500',
      async (name) => {
        expect400(await t.api.post('/api-keys', w.session, { org_id: w.orgId, name }), /name/, /NUL|surrogate/);
      },
    );

    it.each([[null], [7], [['a']]])('refuses name %j, which is not a string', async (name) => {
      expect400(await t.api.post('/api-keys', w.session, { org_id: w.orgId, name }), /name/, /string/);
    });

    it.each([[['decisions:admin']], [[READ, 'decisions:delete']], [[7]], [[null]]])(
      'refuses scopes %j: an unknown scope',
      async (scopes) => {
        expect400(
          await t.api.post('/api-keys', w.session, { org_id: w.orgId, scopes }),
          /scopes/,
          /decisions:read/,
          /decisions:write/,
        );
      },
    );

    it.each([[READ], [null], [{ 0: READ }]])('refuses scopes %j, which is not an array', async (scopes) => {
      expect400(await t.api.post('/api-keys', w.session, { org_id: w.orgId, scopes }), /scopes/, /array/);
    });

    it.each([['5'], [1.5], [null], [-1], [367], [true], [1e21]])(
      'refuses expires_in_days %j: it must be an integer from 0 to 366',
      async (days) => {
        expect400(
          await t.api.post('/api-keys', w.session, { org_id: w.orgId, expires_in_days: days }),
          /expires_in_days/,
          /integer/,
          /0 to 366/,
        );
      },
    );

    it('refuses an unknown field, naming it', async () => {
      expect400(
        await t.api.post('/api-keys', w.session, { org_id: w.orgId, expiresInDays: 5 }),
        /expiresInDays/,
        /not an accepted field/,
      );
    });

    it('reads a request with no body at all as an empty object: org_id is required', async () => {
      expect400(await t.api.request('POST', '/api-keys', { token: w.session }), /org_id/, /required/);
    });

    it('refuses malformed JSON', async () => {
      const res = await t.api.request('POST', '/api-keys', { token: w.session, rawBody: `{"org_id": "${w.orgId}",` });
      expect400(res, /JSON/);
    });

    it.each([['[]'], ['["org_id"]'], ['"text"'], ['42'], ['null']])(
      'refuses the JSON body %s, which is not an object',
      async (raw) => {
        const res = await t.api.request('POST', '/api-keys', { token: w.session, rawBody: raw });
        expect400(res, /body/, /JSON object/);
      },
    );

    it('stores nothing when it refuses a request', async () => {
      const fresh = await t.seed.world('owner');
      await t.api.post('/api-keys', fresh.session, { org_id: fresh.orgId, expires_in_days: 367 });
      await t.api.post('/api-keys', fresh.session, { org_id: fresh.orgId, scopes: ['decisions:admin'] });
      expect(await listKeys(t, fresh.session)).toEqual([]);
      const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1`, [
        fresh.userId,
      ]);
      expect(rows[0].n).toBe(0);
    });
  });

  describe('403', () => {
    it('refuses an API key, even one holding every scope', async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId, scopes: [READ, WRITE] });
      const res = await t.api.post('/api-keys', key, { org_id: w.orgId });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
      expect(res.body.message).toMatch(/session/);
      expect(await listKeys(t, w.session)).toHaveLength(1);
    });

    it('refuses a viewer asking for decisions:write', async () => {
      const w = await t.seed.world('viewer');
      for (const scopes of [[WRITE], [READ, WRITE]]) {
        const res = await t.api.post('/api-keys', w.session, { org_id: w.orgId, scopes });
        expect(res.status).toBe(403);
        expect(res.body.message).toMatch(/viewer/);
        expect(res.body.message).toMatch(/decisions:write/);
      }
      expect(await listKeys(t, w.session)).toEqual([]);
    });

    it('lets a viewer mint a read key', async () => {
      const w = await t.seed.world('viewer');
      expect((await mintOk(t, w.session, { org_id: w.orgId, scopes: [READ] })).scopes).toEqual([READ]);
      expect((await mintOk(t, w.session, { org_id: w.orgId })).scopes).toEqual([READ]);
    });

    it.each([['member'], ['admin'], ['owner']] as const)('lets a %s mint a write key', async (role) => {
      const w = await t.seed.world(role);
      const body = await mintOk(t, w.session, { org_id: w.orgId, scopes: [WRITE] });
      expect(body.scopes).toEqual([WRITE]);
      expect((await t.api.get('/me', body.key)).body.scopes).toEqual([WRITE]);
    });
  });

  describe('404', () => {
    it('answers a missing org and a foreign org with the same status and the same body', async () => {
      const w = await t.seed.world('owner');
      const foreign = await t.seed.world('owner');
      const body = { name: 'x', scopes: [READ], expires_in_days: 1 };
      const missing = await t.api.post('/api-keys', w.session, { org_id: NOWHERE, ...body });
      const notMine = await t.api.post('/api-keys', w.session, { org_id: foreign.orgId, ...body });
      expect(missing.status).toBe(404);
      expect(notMine.status).toBe(404);
      expect(notMine.text).toBe(missing.text);
      expect(missing.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
      expect(missing.body.message).not.toContain(NOWHERE);
      expect(await listKeys(t, w.session)).toEqual([]);
      expect(await listKeys(t, foreign.session)).toEqual([]);
    });

    it('answers 404 to a user who belongs to no org at all', async () => {
      const lonely = await t.seed.user();
      const other = await t.seed.world('owner');
      const res = await t.api.post('/api-keys', t.seed.session(lonely.id, lonely.email), { org_id: other.orgId });
      expect(res.status).toBe(404);
    });
  });

  describe('409', () => {
    it('refuses a member who has no workspace in the org yet', async () => {
      const orgId = await t.seed.org();
      const user = await t.seed.user();
      await t.seed.member(orgId, user.id, 'owner');
      const session = t.seed.session(user.id, user.email);
      const res = await t.api.post('/api-keys', session, { org_id: orgId });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ statusCode: 409, error: 'Conflict' });
      expect(res.body.message).toMatch(/workspace/);
      expect(await listKeys(t, session)).toEqual([]);

      await t.seed.workspace(orgId, user.id);
      expect((await t.api.post('/api-keys', session, { org_id: orgId })).status).toBe(201);
    });

    it('looks at the workspace in the org of the request, not in another org of the caller', async () => {
      const w = await t.seed.world('owner');
      const second = await t.seed.org();
      await t.seed.member(second, w.userId, 'owner');
      const res = await t.api.post('/api-keys', w.session, { org_id: second });
      expect(res.status).toBe(409);
    });
  });

  describe('401', () => {
    it('refuses a request with no credential or a bad session before reading the body', async () => {
      const w = await t.seed.world('owner');
      const none = await t.api.post('/api-keys', undefined, { org_id: w.orgId });
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Bearer');
      const forged = t.seed.session(w.userId, w.email, { secret: 'another-secret-another-secret-another-secret' });
      expect((await t.api.post('/api-keys', forged, { org_id: w.orgId })).status).toBe(401);
      expect((await t.api.post('/api-keys', undefined, { bogus: true })).status).toBe(401);
    });
  });
});

/** The documented checksum: CRC32 of everything before it, six base62 digits. */
function base62Checksum(body: string): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = alphabet[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}
