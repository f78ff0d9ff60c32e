import { describe, expect, it } from 'vitest';
import { ActivityEvents, type ActivityEvent } from '../events/activity-events.js';
import { MAX_PENDING_REFUNDS, PendingRefunds } from './pending-refunds.js';
import { SYSTEM_ATTRIBUTION, type Attribution } from '../common/meters.js';
import type { UsageRepository } from './usage.repository.js';

const outage = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/** A repository whose refunds fail while `down` is set, and records what landed. */
class FlakyRepository {
  down = false;
  readonly landed: Array<{ orgId: string; meter: string; count: number; by?: string }> = [];
  async refund(orgId: string, _day: string, meter: string, count: number, by: Attribution): Promise<void> {
    if (this.down) throw outage();
    this.landed.push(
      by === SYSTEM_ATTRIBUTION ? { orgId, meter, count } : { orgId, meter, count, by: by.credentialId },
    );
  }
}

function setup() {
  const repo = new FlakyRepository();
  const activity = new ActivityEvents();
  const events: ActivityEvent[] = [];
  activity.on((e) => events.push(e));
  const sut = new PendingRefunds(repo as unknown as UsageRepository, activity);
  return { repo, sut, events };
}

const refund = (orgId = 'org-1', count = 1, by: Attribution = SYSTEM_ATTRIBUTION) => ({
  orgId,
  day: '2030-01-01',
  meter: 'captures' as const,
  count,
  by,
});

describe('PendingRefunds', () => {
  it('keeps refunds of different credentials apart while the database is away, and gives each back to its own', async () => {
    const { repo, sut } = setup();
    const key: Attribution = { kind: 'api_key', credentialId: 'key-1', userId: 'user-1' };
    repo.down = true;
    await sut.refund(refund('org-1', 1, key));
    await sut.refund(refund('org-1', 2));
    await sut.refund(refund('org-1', 4, key));
    repo.down = false;
    await sut.retry();
    expect(repo.landed).toEqual(
      expect.arrayContaining([
        { orgId: 'org-1', meter: 'captures', count: 5, by: 'key-1' },
        { orgId: 'org-1', meter: 'captures', count: 2 },
      ]),
    );
    expect(repo.landed).toHaveLength(2);
  });

  it('lands a refund at once while the database answers', async () => {
    const { repo, sut } = setup();
    await sut.refund(refund());
    expect(repo.landed).toEqual([{ orgId: 'org-1', meter: 'captures', count: 1 }]);
    expect(sut.size).toBe(0);
  });

  it('keeps refunds the database cannot take, merged per org, day and meter, and lands them once it is back', async () => {
    const { repo, sut, events } = setup();
    repo.down = true;
    await sut.refund(refund('org-1'));
    await sut.refund(refund('org-1', 2));
    await sut.refund(refund('org-2'));
    expect(sut.size).toBe(2);
    expect(events).toContainEqual({ type: 'usage.refunds_pending', pending: 2 });
    await sut.retry();
    expect(sut.size, 'still down: still kept').toBe(2);
    repo.down = false;
    await sut.retry();
    expect(repo.landed).toEqual([
      { orgId: 'org-1', meter: 'captures', count: 3 },
      { orgId: 'org-2', meter: 'captures', count: 1 },
    ]);
    expect(sut.size).toBe(0);
    expect(events.at(-1)).toEqual({ type: 'usage.refunds_pending', pending: 0 });
  });

  it('tries once more on shutdown', async () => {
    const { repo, sut } = setup();
    repo.down = true;
    await sut.refund(refund());
    repo.down = false;
    await sut.onApplicationShutdown();
    expect(repo.landed).toHaveLength(1);
  });

  it('is bounded: past the limit a new refund is dropped, never an unbounded queue', async () => {
    const { repo, sut } = setup();
    repo.down = true;
    for (let i = 0; i <= MAX_PENDING_REFUNDS; i++) await sut.refund(refund(`org-${i}`));
    expect(sut.size).toBe(MAX_PENDING_REFUNDS);
    await sut.onApplicationShutdown();
  });

  it('lets an error that is not an outage through', async () => {
    const { sut } = setup();
    const bug = new TypeError('bug');
    (sut as unknown as { usage: { refund: () => Promise<void> } }).usage.refund = async () => Promise.reject(bug);
    await expect(sut.refund(refund())).rejects.toBe(bug);
  });
});
