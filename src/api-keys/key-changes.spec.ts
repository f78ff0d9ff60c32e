import { ConflictException, NotFoundException } from '@nestjs/common';
import { beforeEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../auth/api-key-format.js';
import type { Principal } from '../auth/principal.js';
import { TestClock } from '../../test/support/clock.js';
import { keyChangesOverFakes, noKeyPolicy } from '../../test/support/key-store-fakes.js';
import { testSession } from '../../test/support/principal.js';
import { ERRORS } from '../common/error-messages.js';
import { OrgDirectory, type MemberContext, type MintStanding } from '../directory/org-directory.js';
import { Settings } from '../settings/settings.js';
import type { ApiKeyRepository } from './api-key.repository.js';
import { ApiKeysService } from './api-keys.service.js';
import { KeyMinting } from './key-minting.js';

/**
 * The unit of work behind every key change (KeyChanges), driven through ApiKeysService: what is
 * written with each change, and the one tail after it (relay woken, acknowledgement awaited for
 * changes that narrow what verifies, the in-process signal).
 */
const USER = '5a0f6a8e-1b7c-4d2e-9f3a-0c1d2e3f4a5b';
const ORG = '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const API_KEY_SECRET = 'unit-test-api-key-secret-0123456789abcdef';

class OneOrgDirectory extends OrgDirectory {
  async mintStanding(userId: string, orgId: string): Promise<MintStanding | null> {
    return userId === USER && orgId === ORG ? { role: 'owner', hasWorkspace: true } : null;
  }
  async memberContexts(): Promise<Map<string, MemberContext>> {
    return new Map();
  }
  async userOrgs(): Promise<MemberContext[]> {
    return [];
  }
  async orgPlan(): Promise<null> {
    return null;
  }
}

const session = (): Principal => testSession({ userId: USER, email: 'u@example.com' });

describe('KeyChanges, the unit of work of every key change', () => {
  let clock: TestClock;
  let f: ReturnType<typeof keyChangesOverFakes>;
  let sut: ApiKeysService;
  let settings: Settings;

  beforeEach(() => {
    clock = new TestClock('2030-01-02T03:04:05.678Z');
    f = keyChangesOverFakes();
    settings = new Settings({
      apiKeySecret: API_KEY_SECRET,
      session: { secret: 'unit-test-session-secret-0123456789abcdef' },
      clock,
    });
    const keys = f.keys as never as ApiKeyRepository;
    sut = new ApiKeysService(
      keys,
      f.changes,
      new OneOrgDirectory(),
      settings,
      new KeyMinting(keys, f.changes, settings, noKeyPolicy),
    );
  });

  describe('mint', () => {
    it('writes the key with its audit event and api_key.created, wakes the relay, signals, and waits for no instance', async () => {
      const minted = await sut.mint(session(), { org_id: ORG, name: 'ci' });
      expect(f.written.audit.map((e) => e.action)).toEqual(['api_key.minted']);
      expect(f.written.events).toEqual([
        {
          orgId: ORG,
          type: 'api_key.created',
          // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types asymmetric matchers as `any`
          data: expect.objectContaining({ id: minted.id, lookup: minted.lookup }),
          at: clock.now(),
        },
      ]);
      expect(JSON.stringify(f.written)).not.toContain(minted.key);
      expect(f.outbox.woken).toBe(1);
      expect(f.signals).toEqual([{ type: 'api_key.minted' }]);
      expect(f.invalidation.awaitAcknowledged).not.toHaveBeenCalled();
    });

    it('writes no outbox event while events are off, and the same key and audit event', async () => {
      f.outbox.enabled = false;
      await sut.mint(session(), { org_id: ORG });
      expect(f.written.events).toEqual([]);
      expect(f.written.audit.map((e) => e.action)).toEqual(['api_key.minted']);
      expect(f.keys.rows).toHaveLength(1);
    });
  });

  describe('revoke', () => {
    it('waits for every instance before answering, then signals; a repeat writes nothing but answers alike', async () => {
      const { id } = await sut.mint(session(), { org_id: ORG });
      await sut.revoke(session(), id);
      await sut.revoke(session(), id);
      expect(f.written.events.map((e) => e.type)).toEqual(['api_key.created', 'api_key.revoked']);
      expect(f.invalidation.awaitAcknowledged).toHaveBeenCalledTimes(2);
      expect(f.signals.map((s) => s.type)).toEqual(['api_key.minted', 'api_key.revoked', 'api_key.revoked']);
    });

    it('finds nothing for a revoke scoped to another org: null, nothing written, no wait, no signal', async () => {
      const { id } = await sut.mint(session(), { org_id: ORG });
      const admin = '0b9d8c7e-6f5a-4b3c-9d2e-1f0a9b8c7d6e';
      const revoked = await f.changes.revoke({
        change: { scope: 'org_id', owner: 'f0e1d2c3-b4a5-4697-8877-665544332211', keyId: id, at: clock.now() },
        audit: {
          action: 'api_key.revoked_by_admin',
          actor: { type: 'user', id: admin },
          target: { type: 'api_key' },
          details: {},
          withOwner: true,
        },
        event: { revokedBy: admin },
      });
      expect(revoked).toBeNull();
      expect(f.signals.map((s) => s.type)).toEqual(['api_key.minted']);
      expect(f.written.events.map((e) => e.type)).toEqual(['api_key.created']);
      expect(f.invalidation.awaitAcknowledged).not.toHaveBeenCalled();
    });
  });

  describe('rotate', () => {
    it('writes the new secret, its audit event and api_key.rotated in one transaction, then waits for every instance', async () => {
      const minted = await sut.mint(session(), { org_id: ORG, name: 'ci' });
      const rotated = await sut.rotate(session(), minted.id, { grace_period_seconds: 60 });
      expect(rotated).toMatchObject({
        id: minted.id,
        name: 'ci',
        previous_secret_expires_at: '2030-01-02T03:05:05.678Z',
      });
      expect(f.keys.rows[0]).toMatchObject({ lookup: rotated.lookup, previousLookup: minted.lookup });
      expect(f.keys.rows[0].keyHash.equals(hashApiKey(settings.apiKeySecret!, rotated.key))).toBe(true);
      expect(f.written.audit.at(-1)).toMatchObject({
        action: 'api_key.rotated',
        details: { previous_lookup: minted.lookup, grace_period_seconds: 60 },
      });
      expect(f.written.events.at(-1)).toMatchObject({
        type: 'api_key.rotated',
        data: { previous_lookup: minted.lookup, previous_secret_expires_at: '2030-01-02T03:05:05.678Z' },
      });
      expect(f.invalidation.awaitAcknowledged).toHaveBeenCalledTimes(1);
      expect(f.signals.at(-1)).toEqual({ type: 'api_key.rotated' });
    });

    it('draws a fresh secret on a lookup collision, once, in the unit of work', async () => {
      const minted = await sut.mint(session(), { org_id: ORG });
      f.keys.failInserts = [Object.assign(new Error('duplicate key'), { code: '23505' })];
      const rotated = await sut.rotate(session(), minted.id, {});
      expect(f.keys.rows[0].lookup).toBe(rotated.lookup);
      expect(f.written.audit.filter((e) => e.action === 'api_key.rotated')).toHaveLength(1);
    });

    it('answers 404 for no such key of the caller and 409 for a revoked one, with nothing written and no wait', async () => {
      const minted = await sut.mint(session(), { org_id: ORG });
      await expect(sut.rotate(session(), '3f2e1d0c-9b8a-4766-a554-433221100fed', {})).rejects.toThrow(
        new NotFoundException(ERRORS.keyNotFound),
      );
      await sut.revoke(session(), minted.id);
      f.invalidation.awaitAcknowledged.mockClear();
      await expect(sut.rotate(session(), minted.id, {})).rejects.toThrow(
        new ConflictException(ERRORS.keyRevokedCannotRotate),
      );
      expect(f.written.events.map((e) => e.type)).toEqual(['api_key.created', 'api_key.revoked']);
      expect(f.invalidation.awaitAcknowledged).not.toHaveBeenCalled();
    });
  });

  describe('revokeLeaked', () => {
    it('audits and announces (revoked and leaked) only the keys revoked now, then waits once for all', async () => {
      const a = await sut.mint(session(), { org_id: ORG, name: 'a' });
      const b = await sut.mint(session(), { org_id: ORG, name: 'b' });
      await sut.revoke(session(), b.id);
      f.invalidation.awaitAcknowledged.mockClear();
      const found = await sut.revokeLeaked([a.id, b.id, '3f2e1d0c-9b8a-4766-a554-433221100fed'], 'public_revocation');
      expect(found).toEqual([a.id, b.id]);
      expect(f.written.audit.at(-1)).toEqual({
        orgId: ORG,
        action: 'api_key.revoked_as_leaked',
        actor: { type: 'system', id: null, source: 'public_revocation' },
        target: { type: 'api_key', id: a.id },
        details: { name: 'a', lookup: a.lookup, source: 'public_revocation' },
      });
      expect(f.written.audit.filter((e) => e.action === 'api_key.revoked_as_leaked')).toHaveLength(1);
      expect(f.written.events.slice(-2).map((e) => [e.type, e.data?.id, e.data?.source])).toEqual([
        ['api_key.revoked', a.id, 'public_revocation'],
        ['api_key.leaked', a.id, 'public_revocation'],
      ]);
      expect(f.invalidation.awaitAcknowledged).toHaveBeenCalledTimes(1);
      expect(f.signals.filter((s) => s.type === 'api_key.revoked')).toHaveLength(2); // b's own revoke, then a
    });

    it('waits for nothing when no reported key exists', async () => {
      expect(await sut.revokeLeaked(['3f2e1d0c-9b8a-4766-a554-433221100fed'], 'github_secret_scanning')).toEqual([]);
      expect(f.invalidation.awaitAcknowledged).not.toHaveBeenCalled();
    });
  });
});
