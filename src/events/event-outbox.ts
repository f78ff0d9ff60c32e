import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ActivityEvents } from './activity-events.js';
import { INSERT_OUTBOX_SQL, outboxParams, type OutboxEvent } from './event-types.js';

/**
 * The transactional outbox: a change's events are written in the change's own transaction (or
 * statement) and a relay turns them into deliveries. Always injectable (CoreModule provides it);
 * `enabled` says whether this process writes events at all: off until EventOutboxModule is
 * imported (the server's events module, the operator CLI), so a host without events never fills
 * a table nobody drains. Writers check `enabled` when they build a statement; `write` and
 * `emitOnce` do nothing while it is off.
 */
@Injectable()
export class EventOutbox {
  private on = false;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly activity: ActivityEvents,
  ) {}

  get enabled(): boolean {
    return this.on;
  }

  /** Called once by EventOutboxModule: from now on this process writes events. */
  enable(): void {
    this.on = true;
  }

  /** One more statement in the change's transaction (`manager`). */
  async write(manager: EntityManager, event: OutboxEvent): Promise<void> {
    if (this.on) await manager.query(INSERT_OUTBOX_SQL, outboxParams(event));
  }

  /** A relay in this process is woken whenever events were committed (the in-process signal, ActivityEvents). */
  onWritten(wake: () => void): void {
    this.activity.on((event) => {
      if (event.type === 'outbox.written') wake();
    });
  }

  /** After the commit of something that wrote events. */
  written(): void {
    if (this.on) this.activity.emit({ type: 'outbox.written' });
  }

  /**
   * An event that is not part of another change (a threshold crossed, a scan's finding), written
   * once per (kind, subject, mark) whichever instance gets there first. True when written now.
   */
  async emitOnce(kind: string, subject: string, mark: string, event: OutboxEvent): Promise<boolean> {
    if (!this.on) return false;
    const written = await this.db.transaction(async (m) => {
      const marked: unknown[] = await m.query(
        `INSERT INTO event_marks (kind, subject, mark) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING kind`,
        [kind, subject, mark],
      );
      if (marked.length === 0) return false;
      await m.query(INSERT_OUTBOX_SQL, outboxParams(event));
      return true;
    });
    if (written) this.written();
    return written;
  }
}
