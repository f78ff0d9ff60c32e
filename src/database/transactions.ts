import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';

/**
 * One transaction around a change and what is written with it (its audit event, its outbox
 * events): the caller hands the manager to the repositories, AuditService.record and
 * EventOutbox.write, so all commit or none does. Key changes go through KeyChanges, which uses it.
 */
@Injectable()
export class Transactions {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.db.transaction(work);
  }
}

/** TypeORM returns `[rows, count]` for UPDATE/DELETE ... RETURNING on postgres and plain rows otherwise. */
export function returnedRows<T>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number')
    return result[0] as T[];
  return result as T[];
}
