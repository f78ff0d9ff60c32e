import { describe, expect, it } from 'vitest';
import { DrivenLease } from '../../test/support/verification-cache.js';
import { CoherentCache, type CoherentCacheOptions } from './coherent-cache.js';

type Entry = { orgId: string };

function setup(options: Partial<CoherentCacheOptions<string, Entry>> = {}, enabled = true) {
  const lease = new DrivenLease();
  lease.enabled = enabled;
  const lookups: boolean[] = [];
  const cache = new CoherentCache<string, Entry>(lease.lease, {
    max: 3,
    invalidatedBy: (t) => (t.orgId ? (_key, entry) => entry.orgId === t.orgId : null),
    onLookup: (hit) => lookups.push(hit),
    ...options,
  });
  return { lease, cache, lookups };
}

describe('CoherentCache', () => {
  it('keeps an answer read under the lease and answers it while the lease holds', () => {
    const { cache, lookups } = setup();
    expect(cache.set('a', { orgId: 'o1' }, cache.stamp())).toBe(true);
    expect(cache.get('a')).toEqual({ orgId: 'o1' });
    expect(cache.get('b')).toBeUndefined();
    expect(lookups).toEqual([true, false]);
  });

  it('does not keep an answer whose read started before a change was announced', () => {
    const { cache, lease } = setup();
    const stamp = cache.stamp();
    lease.notify({ keyId: 'unrelated' });
    expect(cache.set('a', { orgId: 'o1' }, stamp)).toBe(false);
    expect(cache.get('a')).toBeUndefined();
  });

  it('load-through: stamps before the read and keeps the answer only if no change raced it', async () => {
    const { cache, lease } = setup();
    expect(await cache.load('a', async () => ({ orgId: 'o1' }))).toEqual({ orgId: 'o1' });
    expect(cache.get('a')).toEqual({ orgId: 'o1' });
    const raced = await cache.load('b', async () => {
      lease.notify({ orgId: 'o9' });
      return { orgId: 'o2' };
    });
    expect(raced).toEqual({ orgId: 'o2' });
    expect(cache.get('b')).toBeUndefined();
  });

  it('drops the entries a change names, and only those', () => {
    const { cache, lease } = setup();
    cache.set('a', { orgId: 'o1' }, cache.stamp());
    cache.set('b', { orgId: 'o2' }, cache.stamp());
    lease.notify({ orgId: 'o1' });
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toEqual({ orgId: 'o2' });
    lease.notify({ userId: 'u1' });
    expect(cache.get('b')).toEqual({ orgId: 'o2' });
  });

  it('answers nothing, keeps nothing and forgets everything once the lease lapses', () => {
    const { cache, lease, lookups } = setup();
    cache.set('a', { orgId: 'o1' }, cache.stamp());
    lease.valid = false;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.stamp()).toBeNull();
    expect(cache.set('b', { orgId: 'o2' }, 0)).toBe(false);
    lease.notify(null);
    lease.valid = true;
    expect(cache.get('a')).toBeUndefined();
    expect(lookups).toEqual([false]);
  });

  it('keeps nothing with an expiry already past', () => {
    const { cache } = setup();
    expect(cache.set('a', { orgId: 'o1' }, cache.stamp(), 0)).toBe(false);
    expect(cache.get('a')).toBeUndefined();
  });

  it('is bounded: the least recently used entry goes first', () => {
    const { cache } = setup();
    for (const k of ['a', 'b', 'c', 'd']) cache.set(k, { orgId: k }, cache.stamp());
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('d')).toEqual({ orgId: 'd' });
  });

  describe('without a lease at all', () => {
    it('keeps nothing unless it has an unleased time to live', () => {
      const { cache } = setup({}, false);
      expect(cache.enabled).toBe(false);
      expect(cache.stamp()).toBeNull();
      expect(cache.set('a', { orgId: 'o1' }, 0)).toBe(false);
      expect(cache.get('a')).toBeUndefined();
    });

    it('with one, keeps answers (for that long) and still drops what a change names', async () => {
      const { cache, lease } = setup({ unleasedTtlMs: 5_000 }, false);
      expect(cache.enabled).toBe(true);
      await cache.load('a', async () => ({ orgId: 'o1' }));
      expect(cache.get('a')).toEqual({ orgId: 'o1' });
      lease.notify({ orgId: 'o1' });
      expect(cache.get('a')).toBeUndefined();
      // A stamp of the leased kind is not the unleased one.
      expect(cache.set('b', { orgId: 'o2' }, 0)).toBe(false);
    });
  });
});
