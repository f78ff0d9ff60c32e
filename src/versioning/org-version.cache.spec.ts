import { describe, expect, it } from 'vitest';
import { DrivenLease } from '../../test/support/verification-cache.js';
import { OrgVersionCache } from './org-version.cache.js';
import type { OrgVersionRepository } from './org-version.repository.js';

function setup(enabled = true) {
  const lease = new DrivenLease();
  lease.enabled = enabled;
  const pins = new Map<string, string>([['o1', '2026-11-26']]);
  const reads: string[] = [];
  const repository = {
    pinOf: async (orgId: string) => {
      reads.push(orgId);
      return pins.get(orgId) ?? null;
    },
  } as Pick<OrgVersionRepository, 'pinOf'> as OrgVersionRepository;
  return { lease, pins, reads, cache: new OrgVersionCache(lease.lease, repository) };
}

describe('OrgVersionCache', () => {
  it("answers an org's pin from memory once read, until a change to that org is announced", async () => {
    const { cache, lease, pins, reads } = setup();
    expect(cache.cached('o1')).toBeUndefined();
    expect(await cache.load('o1')).toBe('2026-11-26');
    expect(cache.cached('o1')).toBe('2026-11-26');
    pins.set('o1', '2026-11-27');
    lease.notify({ orgId: 'o2' });
    expect(cache.cached('o1')).toBe('2026-11-26');
    lease.notify({ orgId: 'o1' });
    expect(cache.cached('o1')).toBeUndefined();
    expect(await cache.load('o1')).toBe('2026-11-27');
    expect(reads).toEqual(['o1', 'o1']);
  });

  it('remembers that an org has no pin row (null), and answers null for it', async () => {
    const { cache } = setup();
    expect(await cache.load('nowhere')).toBeNull();
    expect(cache.cached('nowhere')).toBeNull();
  });

  it('without a lease, still keeps pins (briefly)', async () => {
    const { cache } = setup(false);
    await cache.load('o1');
    expect(cache.cached('o1')).toBe('2026-11-26');
  });
});
