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

/** A repository whose refunds land or fail when the test says, one call at a time. */
class GatedRepository {
  readonly calls: Array<{ land: () => void; fail: (error: Error) => void }> = [];
  refund(): Promise<void> {
    return new Promise<void>((land, fail) => this.calls.push({ land, fail }));
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

  it('settles once every refund being written has landed or failed, and at once when none is', async () => {
    const repo = new GatedRepository();
    const sut = new PendingRefunds(repo as unknown as UsageRepository);
    await sut.settled();
    const landing = sut.refund(refund('org-1'));
    const failing = sut.refund(refund('org-2'));
    failing.catch(() => undefined);
    let settled = false;
    const done = sut.settled().then(() => (settled = true));

    repo.calls[0].land();
    await landing;
    await Promise.resolve();
    expect(settled).toBe(false);
    repo.calls[1].fail(new TypeError('bug'));
    await done;
    expect(settled).toBe(true);
  });

  it('counts a refund kept for retry as settled: settled() does not wait out an outage', async () => {
    const { repo, sut } = setup();
    repo.down = true;
    await sut.refund(refund());
    await sut.settled();
    expect(sut.size).toBe(1);
    await sut.onApplicationShutdown();
  });

  it('on shutdown, waits for a refund being written and tries it once more when the database refused it', async () => {
    const repo = new GatedRepository();
    const sut = new PendingRefunds(repo as unknown as UsageRepository);
    void sut.refund(refund('org-1', 2));
    let over = false;
    const shutdown = sut.onApplicationShutdown().then(() => (over = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(over, 'the refund is still being written').toBe(false);
    repo.calls[0].fail(outage());
    await new Promise((resolve) => setImmediate(resolve));
    expect(repo.calls, 'the last try, at once (not after the backoff)').toHaveLength(2);
    repo.calls[1].land();
    await shutdown;
    expect(sut.size).toBe(0);
  });
});
