import { describe, expect, it } from 'vitest';
import type { KeyVerificationRow } from './api-key-store.js';
import { Settings } from '../settings/settings.js';
import type { MemberContext } from '../directory/org-directory.js';
import { AuthMetrics } from './auth-metrics.js';
import { VerificationCache } from './verification-cache.js';
import { DrivenLease } from '../../test/support/verification-cache.js';

const row = (over: Partial<KeyVerificationRow> = {}): KeyVerificationRow => ({
  id: 'k1',
  lookup: 'L1',
  keyHash: Buffer.alloc(32),
  previousLookup: null,
  previousKeyHash: null,
  previousExpiresAt: null,
  userId: 'u1',
  orgId: 'o1',
  scopes: ['decisions:read'],
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
  email: 'a@example.com',
  role: 'owner',
  plan: 'free',
  memberCount: 1,
  usage: { asks: 1, retrieves: 2, imports: 3, captures: 4 },
  ...over,
});
const ctx = (userId: string, orgId: string): MemberContext => ({
  userId,
  orgId,
  email: 'a@example.com',
  role: 'owner',
  plan: 'free',
  memberCount: 1,
});

function setup() {
  const lease = new DrivenLease();
  const settings = new Settings({ session: { secret: 's'.repeat(32) }, verificationCache: { maxEntries: 3 } });
  const metrics = new AuthMetrics();
  const cache = new VerificationCache(lease.lease, settings, metrics);
  return { lease, cache, metrics };
}

describe('VerificationCache', () => {
  it('keeps a key row read under the lease, without its usage meters', () => {
    const { cache, metrics } = setup();
    cache.putKey('L1', row(), cache.stamp(), Date.now());
    expect(cache.key('L1')).not.toHaveProperty('usage');
    expect(cache.key('L1')?.id).toBe('k1');
    expect(metrics.cacheCounts.key).toEqual({ hit: 2, miss: 0 });
  });

  it('does not keep an answer whose read started before a notification arrived (it may predate the change)', () => {
    const { cache, lease } = setup();
    const stamp = cache.stamp();
    lease.notify({ keyId: 'other' });
    cache.putKey('L1', row(), stamp, Date.now());
    expect(cache.key('L1')).toBeUndefined();
  });

  it('answers nothing, keeps nothing and forgets everything once the lease lapses', () => {
    const { cache, lease } = setup();
    cache.putKey('L1', row(), cache.stamp(), Date.now());
    lease.valid = false;
    expect(cache.key('L1')).toBeUndefined();
    expect(cache.stamp()).toBeNull();
    lease.notify(null);
    lease.valid = true;
    expect(cache.key('L1')).toBeUndefined();
  });

  it('drops the rows a change names: the key, its owner, its org', () => {
    const { cache, lease } = setup();
    const put = () => {
      cache.putKey('L1', row(), cache.stamp(), Date.now());
      cache.putKey('L2', row({ id: 'k2', lookup: 'L2', userId: 'u2', orgId: 'o2' }), cache.stamp(), Date.now());
    };
    for (const change of [{ keyId: 'k1' }, { userId: 'u1' }, { orgId: 'o1' }]) {
      put();
      lease.notify(change);
      expect(cache.key('L1')).toBeUndefined();
      expect(cache.key('L2')?.id).toBe('k2');
    }
  });

  it('never keeps a key past its expiry, nor an already expired one', () => {
    const { cache } = setup();
    cache.putKey('L1', row({ expiresAt: new Date(Date.now() - 1) }), cache.stamp(), Date.now());
    expect(cache.key('L1')).toBeUndefined();
  });

  it('drops a session standing when its user or one of its orgs changes', () => {
    const { cache, lease } = setup();
    cache.putSession('u1', null, [ctx('u1', 'o1')], cache.stamp());
    cache.putSession('u1', 'o9', [], cache.stamp());
    cache.putSession('u2', null, [ctx('u2', 'o2')], cache.stamp());
    lease.notify({ orgId: 'o1' });
    expect(cache.session('u1', null)).toBeUndefined();
    expect(cache.session('u1', 'o9')).toEqual([]);
    lease.notify({ userId: 'u1', orgId: 'o9' });
    expect(cache.session('u1', 'o9')).toBeUndefined();
    expect(cache.session('u2', null)).toEqual([ctx('u2', 'o2')]);
  });

  it('is bounded: the least recently used entry goes first', () => {
    const { cache } = setup();
    for (const l of ['L1', 'L2', 'L3', 'L4']) cache.putKey(l, row({ id: l, lookup: l }), cache.stamp(), Date.now());
    expect(cache.key('L1')).toBeUndefined();
    expect(cache.key('L4')?.id).toBe('L4');
  });
});
