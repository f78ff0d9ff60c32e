import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { INSERT_OUTBOX_SQL, outboxParams, type OutboxEvent } from './event-types.js';

/**
 * Present when events are on (the standalone server registers EventsModule). Services that
 * change something write its event to the outbox table in the same transaction only when this
 * is injected, then call `written()`, which wakes the relay at once instead of at its next poll.
 */
@Injectable()
export class EventOutbox {
  private wake: (() => void) | null = null;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The transactional outbox: one more statement in the change's transaction (`manager`). */
  async write(manager: EntityManager, event: OutboxEvent): Promise<void> {
    await manager.query(INSERT_OUTBOX_SQL, outboxParams(event));
  }

  onWritten(wake: () => void): void {
    this.wake = wake;
  }

  written(): void {
    this.wake?.();
  }

  /**
   * An event that is not part of another change (a threshold crossed, a scan's finding), written
   * once per (kind, subject, mark) whichever instance gets there first. True when written now.
   */
  async emitOnce(kind: string, subject: string, mark: string, event: OutboxEvent): Promise<boolean> {
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
