import { describe, expect, it, vi } from 'vitest';
import type { DataSource, EntityManager } from 'typeorm';
import { ActivityEvents, type ActivityEvent } from './activity-events.js';
import { EventOutbox } from './event-outbox.js';
import { EventOutboxModule } from './event-outbox.module.js';

/** The outbox's capability: off until EventOutboxModule turns it on; the relay is woken through the one in-process signal. */
describe('EventOutbox', () => {
  const event = {
    orgId: '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
    type: 'api_key.created' as const,
    data: { id: 'k' },
    at: new Date('2030-01-01T00:00:00Z'),
  };

  function outbox() {
    const activity = new ActivityEvents();
    const signals: ActivityEvent[] = [];
    activity.on((e) => signals.push(e));
    const db = { transaction: vi.fn() };
    const sut = new EventOutbox(db as never as DataSource, activity);
    const manager = { query: vi.fn(async () => []) };
    const wake = vi.fn();
    sut.onWritten(wake);
    return { sut, db, manager, wake, signals };
  }

  it('writes nothing, wakes nothing and marks nothing while events are off', async () => {
    const { sut, db, manager, wake, signals } = outbox();
    expect(sut.enabled).toBe(false);
    await sut.write(manager as never as EntityManager, event);
    sut.written();
    expect(await sut.emitOnce('usage_threshold', 'subject', '80', event)).toBe(false);
    expect(manager.query).not.toHaveBeenCalled();
    expect(db.transaction).not.toHaveBeenCalled();
    expect(wake).not.toHaveBeenCalled();
    expect(signals).toEqual([]);
  });

  it('is turned on by importing EventOutboxModule: writes in the caller’s transaction and wakes the relay through ActivityEvents', async () => {
    const { sut, manager, wake, signals } = outbox();
    new EventOutboxModule(sut);
    expect(sut.enabled).toBe(true);
    await sut.write(manager as never as EntityManager, event);
    expect(manager.query).toHaveBeenCalledTimes(1);
    sut.written();
    expect(wake).toHaveBeenCalledTimes(1);
    expect(signals).toEqual([{ type: 'outbox.written' }]);
  });
});
