import { FakeDirectory } from '../../test/support/fakes.js';
import { ConflictException, ForbiddenException, NotFoundException } from '@nestjs/common';
import { beforeEach, describe, expect, it } from 'vitest';
import { hashApiKey, parseApiKey } from '../auth/api-key-format.js';
import type { Principal } from '../auth/principal.js';
import { TestClock } from '../../test/support/clock.js';
import { keyChangesOverFakes, noKeyPolicy, type FakeKeys, type Written } from '../../test/support/key-store-fakes.js';
import { testSession } from '../../test/support/principal.js';
import { ERRORS } from '../common/error-messages.js';
import type { Role } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import type { ApiKeyRepository } from './api-key.repository.js';
import { ApiKeysService } from './api-keys.service.js';
import { KeyMinting } from './key-minting.js';

const USER = '5a0f6a8e-1b7c-4d2e-9f3a-0c1d2e3f4a5b';
const ORG = '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const OTHER_ORG = '9e8d7c6b-5a49-4382-a170-6f5e4d3c2b1a';
const API_KEY_SECRET = 'unit-test-api-key-secret-0123456789abcdef';
const DAY_MS = 86_400_000;

const session = (userId = USER): Principal => testSession({ userId, email: 'u@example.com' });

describe('ApiKeysService', () => {
  let repo: FakeKeys;
  let directory: FakeDirectory;
  let clock: TestClock;
  let settings: Settings;
  let sut: ApiKeysService;
  let written: Written;
  let invalidation: ReturnType<typeof keyChangesOverFakes>['invalidation'];
  /** The service over the real unit of work (KeyChanges), with fakes for the database, the audit log and the outbox. */
  const service = (s: Settings) => {
    const fixture = keyChangesOverFakes();
    ({ keys: repo, written, invalidation } = fixture);
    const keys = repo as never as ApiKeyRepository;
    const minting = new KeyMinting(keys, fixture.changes, s, noKeyPolicy);
    return new ApiKeysService(keys, fixture.changes, directory, s, minting);
  };

  const member = (role: Role, hasWorkspace = true, orgId = ORG) =>
    directory.join(USER, orgId, role, { workspace: hasWorkspace });
  const settingsWith = (extra: Partial<ConstructorParameters<typeof Settings>[0]>) =>
    new Settings({
      apiKeySecret: API_KEY_SECRET,
      session: { secret: 'unit-test-session-secret-0123456789abcdef' },
      clock,
      ...extra,
    });

  beforeEach(() => {
    directory = new FakeDirectory();
    directory.user(USER, 'u@example.com');
    clock = new TestClock('2030-01-02T03:04:05.678Z');
    settings = settingsWith({});
    sut = service(settings);
  });

  describe('mint', () => {
    it('returns the new key once, with the record of what was stored', async () => {
      member('owner');
      const minted = await sut.mint(session(), { org_id: ORG, name: 'ci' });
      expect(parseApiKey(minted.key)).toBe(minted.lookup);
      expect(minted).toEqual({
        key: minted.key,
        id: repo.rows[0].id,
        org_id: ORG,
        name: 'ci',
        lookup: minted.lookup,
        last4: minted.key.slice(-4),
        scopes: ['decisions:read'],
        created_at: '2030-01-02T03:04:05.678Z',
        state: 'active',
      });
    });

    it('stores only an HMAC of the key under API_KEY_SECRET, never the key or its secret part', async () => {
      member('owner');
      const minted = await sut.mint(session(), { org_id: ORG });
      const [stored] = repo.inserted;
      expect(stored.keyHash.equals(hashApiKey(settings.apiKeySecret!, minted.key))).toBe(true);
      const secretPart = minted.key.slice(minted.key.indexOf(minted.lookup) + minted.lookup.length);
      const asText = JSON.stringify(stored) + stored.keyHash.toString('latin1') + stored.keyHash.toString('hex');
      expect(asText).not.toContain(minted.key);
      expect(asText).not.toContain(secretPart);
      expect(stored).toMatchObject({ userId: USER, orgId: ORG, lookup: minted.lookup, last4: minted.last4 });
    });

    it('stamps created_at from the injected clock and expires_at expires_in_days later', async () => {
      member('owner');
      const minted = await sut.mint(session(), { org_id: ORG, expires_in_days: 366 });
      expect(repo.inserted[0].createdAt.toISOString()).toBe('2030-01-02T03:04:05.678Z');
      expect(Date.parse(minted.expires_at!) - Date.parse(minted.created_at)).toBe(366 * DAY_MS);
    });

    it('stores no expiry for expires_in_days 0 or omitted', async () => {
      member('owner');
      const zero = await sut.mint(session(), { org_id: ORG, expires_in_days: 0 });
      const omitted = await sut.mint(session(), { org_id: ORG });
      expect(repo.inserted.map((k) => k.expiresAt)).toEqual([null, null]);
      expect(zero).not.toHaveProperty('expires_at');
      expect(omitted).not.toHaveProperty('expires_at');
    });

    it('defaults the name to ""', async () => {
      member('owner');
      expect((await sut.mint(session(), { org_id: ORG })).name).toBe('');
    });

    it('looks the org up and stores it in lower case', async () => {
      member('owner');
      const minted = await sut.mint(session(), { org_id: ORG.toUpperCase() });
      expect(minted.org_id).toBe(ORG);
      expect(repo.inserted[0].orgId).toBe(ORG);
    });

    it.each([
      ['omitted', undefined, ['decisions:read']],
      ['empty', [], ['decisions:read']],
      ['duplicated', ['decisions:write', 'decisions:read', 'decisions:write'], ['decisions:read', 'decisions:write']],
      ['write only', ['decisions:write'], ['decisions:write']],
    ] as const)('turns %s scopes into %j', async (_, scopes, expected) => {
      member('member');
      const minted = await sut.mint(session(), { org_id: ORG, scopes: scopes as never });
      expect(minted.scopes).toEqual(expected);
      expect(repo.inserted[0].scopes).toEqual(expected);
    });

    it('answers 404 (and stores nothing) when the org is missing or not the caller’s: one message for both', async () => {
      member('owner', true, OTHER_ORG);
      const missing = await sut.mint(session(), { org_id: ORG }).catch((e: unknown) => e);
      const foreign = await sut
        .mint(session('1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d'), { org_id: OTHER_ORG })
        .catch((e: unknown) => e);
      for (const error of [missing, foreign]) {
        expect(error).toBeInstanceOf(NotFoundException);
        expect((error as NotFoundException).message).toBe(ERRORS.orgNotFound);
      }
      expect(repo.inserted).toEqual([]);
    });

    it('answers 403 (and stores nothing) when a viewer asks for decisions:write', async () => {
      member('viewer');
      for (const scopes of [['decisions:write'], ['decisions:read', 'decisions:write']] as const) {
        await expect(sut.mint(session(), { org_id: ORG, scopes: [...scopes] })).rejects.toBeInstanceOf(
          ForbiddenException,
        );
      }
      expect(repo.inserted).toEqual([]);
    });

    it('lets a viewer mint a read key and a member, admin or owner a write key', async () => {
      member('viewer');
      await expect(sut.mint(session(), { org_id: ORG, scopes: ['decisions:read'] })).resolves.toMatchObject({
        scopes: ['decisions:read'],
      });
      for (const role of ['member', 'admin', 'owner'] as const) {
        member(role);
        await expect(sut.mint(session(), { org_id: ORG, scopes: ['decisions:write'] })).resolves.toMatchObject({
          scopes: ['decisions:write'],
        });
      }
    });

    it('answers 409 (and stores nothing) when the caller has no workspace in the org', async () => {
      member('owner', false);
      await expect(sut.mint(session(), { org_id: ORG })).rejects.toBeInstanceOf(ConflictException);
      expect(repo.inserted).toEqual([]);
    });

    it('draws a fresh key when the lookup collides with an existing one', async () => {
      member('owner');
      repo.failInserts = [Object.assign(new Error('duplicate key'), { code: '23505' })];
      const minted = await sut.mint(session(), { org_id: ORG });
      expect(repo.inserted).toHaveLength(2);
      expect(repo.inserted[0].lookup).not.toBe(repo.inserted[1].lookup);
      expect(minted.lookup).toBe(repo.inserted[1].lookup);
    });

    it('gives up after a few collisions rather than loop forever', async () => {
      member('owner');
      const collision = Object.assign(new Error('duplicate key'), { code: '23505' });
      repo.failInserts = Array(10).fill(collision);
      await expect(sut.mint(session(), { org_id: ORG })).rejects.toBe(collision);
      expect(repo.inserted.length).toBeGreaterThan(1);
      expect(repo.inserted.length).toBeLessThan(10);
    });

    it('does not retry on any other database error', async () => {
      member('owner');
      const outage = Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
      repo.failInserts = [outage];
      await expect(sut.mint(session(), { org_id: ORG })).rejects.toBe(outage);
      expect(repo.inserted).toHaveLength(1);
    });
  });

  describe('list', () => {
    it("returns the caller's keys newest first, without the key and without fields that do not apply", async () => {
      member('owner');
      const first = await sut.mint(session(), { org_id: ORG, name: 'first' });
      clock.advance(1000);
      const second = await sut.mint(session(), { org_id: ORG, name: 'second', expires_in_days: 1 });
      const { keys } = await sut.list(session(), { orgId: null });
      const { key: _k1, ...firstRecord } = first;
      const { key: _k2, ...secondRecord } = second;
      expect(keys).toEqual([secondRecord, firstRecord]);
      expect(repo.listCalls).toEqual([{ userId: USER, orgId: null }]);
    });

    it('passes an org filter on in lower case once the caller is found in that org', async () => {
      member('member');
      await sut.list(session(), { orgId: ORG.toUpperCase() });
      expect(repo.listCalls).toEqual([{ userId: USER, orgId: ORG }]);
    });

    it('answers 404 for a filter naming an org that is missing or not the caller’s, without listing', async () => {
      member('owner');
      await expect(sut.list(session(), { orgId: OTHER_ORG })).rejects.toThrow(
        new NotFoundException(ERRORS.orgNotFound),
      );
      expect(repo.listCalls).toEqual([]);
    });

    it('asks the directory nothing when there is no filter', async () => {
      await sut.list(session(), { orgId: null });
      expect(directory.calls).toEqual([]);
    });
  });

  describe('caps', () => {
    it('answers 409 saying to revoke one (and stores nothing) once the user holds the cap of active keys in the org', async () => {
      member('owner');
      sut = service(settingsWith({ maxActiveKeysPerUserOrg: 2 }));
      await sut.mint(session(), { org_id: ORG });
      const second = await sut.mint(session(), { org_id: ORG });
      const refused = await sut.mint(session(), { org_id: ORG }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ConflictException);
      expect((refused as ConflictException).message).toMatch(/revoke one/);
      expect(repo.inserted).toHaveLength(2);
      await sut.revoke(session(), second.id);
      await expect(sut.mint(session(), { org_id: ORG })).resolves.toMatchObject({ org_id: ORG });
    });

    it('pages the list with a cursor: next_cursor null once no more keys exist (the newest shape), no key twice', async () => {
      member('owner');
      for (let i = 0; i < 5; i++) {
        await sut.mint(session(), { org_id: ORG, name: `k${i}` });
        clock.advance(1000);
      }
      const first = await sut.list(session(), { orgId: null, limit: 2 });
      expect(first.keys.map((k) => k.name)).toEqual(['k4', 'k3']);
      const second = await sut.list(session(), { orgId: null, limit: 2, cursor: first.next_cursor! });
      const third = await sut.list(session(), { orgId: null, limit: 2, cursor: second.next_cursor! });
      expect([...second.keys, ...third.keys].map((k) => k.name)).toEqual(['k2', 'k1', 'k0']);
      expect(third.next_cursor).toBeNull();
      expect(await sut.list(session(), { orgId: null })).toHaveProperty('next_cursor', null);
    });
  });

  describe('revoke', () => {
    it("revokes the caller's key at the clock's time", async () => {
      member('owner');
      const { id } = await sut.mint(session(), { org_id: ORG });
      clock.set('2030-02-01T00:00:00.000Z');
      invalidation.awaitAcknowledged.mockClear();
      await sut.revoke(session(), id);
      // The 204 waits until every instance with a cache has applied the revocation.
      expect(invalidation.awaitAcknowledged).toHaveBeenCalledTimes(1);
      expect(repo.revokeCalls).toEqual([
        { scope: 'user_id', owner: USER, keyId: id, at: new Date('2030-02-01T00:00:00.000Z') },
      ]);
      expect((await sut.list(session(), { orgId: null })).keys[0].revoked_at).toBe('2030-02-01T00:00:00.000Z');
    });

    it('answers 404 when the repository finds no such key of the caller', async () => {
      await expect(sut.revoke(session(), '3f2e1d0c-9b8a-4766-a554-433221100fed')).rejects.toThrow(
        new NotFoundException(ERRORS.keyNotFound),
      );
      expect(written.audit).toEqual([]);
    });

    it('records one audit event for the revoke that changed something, none for a repeat', async () => {
      member('owner');
      const { id } = await sut.mint(session(), { org_id: ORG, name: 'ci' });
      await sut.revoke(session(), id);
      await sut.revoke(session(), id);
      expect(written.audit.map((e) => e.action)).toEqual(['api_key.minted', 'api_key.revoked']);
      expect(written.audit[1]).toEqual({
        orgId: ORG,
        action: 'api_key.revoked',
        actor: { type: 'user', id: USER },
        credential: { type: 'session', id: null },
        target: { type: 'api_key', id },
        details: { name: 'ci' },
      });
    });
  });
});
