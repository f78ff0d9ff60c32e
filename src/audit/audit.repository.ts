import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { KeysetPosition } from '../common/pagination.js';

/** A row of audit_events as the service reads and writes it. */
export interface AuditRow {
  id: string;
  createdAt: Date;
  orgId: string;
  action: string;
  actorType: string;
  actorId: string | null;
  actorSource: string | null;
  credentialType: string | null;
  credentialId: string | null;
  targetType: string;
  targetId: string;
  clientAddress: string | null;
  userAgent: string | null;
  requestId: string | null;
  details: Record<string, unknown>;
}

export type NewAuditRow = Omit<AuditRow, 'id'>;

export interface AuditFilter {
  orgId: string;
  action?: string;
  actorId?: string;
  targetId?: string;
  /** Inclusive. */
  since?: Date;
  /** Exclusive. */
  until?: Date;
}

const COLUMNS = `id, created_at AS "createdAt", org_id AS "orgId", action, actor_type AS "actorType", actor_id AS "actorId",
  actor_source AS "actorSource", credential_type AS "credentialType", credential_id AS "credentialId",
  target_type AS "targetType", target_id AS "targetId", client_address AS "clientAddress", user_agent AS "userAgent",
  request_id AS "requestId", details`;

/** The filter as SQL conditions from parameter $1 on; returns the conditions and their values. */
function where(filter: AuditFilter): { sql: string; values: unknown[] } {
  const values: unknown[] = [filter.orgId];
  const conditions = ['org_id = $1'];
  const add = (column: string, op: string, value: unknown) => {
    values.push(value);
    conditions.push(`${column} ${op} $${values.length}`);
  };
  if (filter.action !== undefined) add('action', '=', filter.action);
  if (filter.actorId !== undefined) add('actor_id', '=', filter.actorId);
  if (filter.targetId !== undefined) add('target_id', '=', filter.targetId);
  if (filter.since !== undefined) add('created_at', '>=', filter.since);
  if (filter.until !== undefined) add('created_at', '<', filter.until);
  return { sql: conditions.join(' AND '), values };
}

/**
 * The INSERT of one event whose values are parameters `$first` to `$first + 13` (auditInsertValues),
 * as `INSERT ... SELECT`: with `from`, one event per row of that relation, so a feature can write
 * its change and the event in one statement (a data-modifying CTE) and an event only if the change happened.
 */
export function auditInsertSql(first: number, from?: string): string {
  const types = [
    'timestamptz',
    'uuid',
    'text',
    'text',
    'uuid',
    'text',
    'text',
    'uuid',
    'text',
    'uuid',
    'text',
    'text',
    'text',
    'jsonb',
  ];
  return `INSERT INTO audit_events (created_at, org_id, action, actor_type, actor_id, actor_source, credential_type, credential_id,
                                    target_type, target_id, client_address, user_agent, request_id, details)
          SELECT ${types.map((t, i) => `$${first + i}::${t}`).join(', ')}${from ? ` FROM ${from}` : ''}`;
}

/**
 * The INSERT of many events given as one JSON array (parameter `$param`, auditRowsJson), one
 * per row of the join `join` adds (e.g. `JOIN k ON k.id = a.target_id`): the events of a batch of
 * changes in the batch's statement, each only if its change happened.
 */
export function auditInsertManySql(param: number, join: string): string {
  return `INSERT INTO audit_events (created_at, org_id, action, actor_type, actor_id, actor_source, credential_type, credential_id,
                                    target_type, target_id, client_address, user_agent, request_id, details)
          SELECT a.created_at, a.org_id, a.action, a.actor_type, a.actor_id, a.actor_source, a.credential_type, a.credential_id,
                 a.target_type, a.target_id, a.client_address, a.user_agent, a.request_id, a.details
            FROM jsonb_populate_recordset(NULL::audit_events, $${param}::jsonb) a ${join}`;
}

/** An event's constant part when only the change's own statement knows its org and target id (see auditInsertPerRowSql). */
export type AuditTemplate = Omit<NewAuditRow, 'orgId' | 'targetId'>;

const rowJson = (r: AuditTemplate & Partial<Pick<NewAuditRow, 'orgId' | 'targetId'>>) => ({
  created_at: r.createdAt.toISOString(),
  org_id: r.orgId ?? null,
  action: r.action,
  actor_type: r.actorType,
  actor_id: r.actorId,
  actor_source: r.actorSource,
  credential_type: r.credentialType,
  credential_id: r.credentialId,
  target_type: r.targetType,
  target_id: r.targetId ?? null,
  client_address: r.clientAddress,
  user_agent: r.userAgent,
  request_id: r.requestId,
  details: r.details,
});

export function auditRowsJson(rows: NewAuditRow[]): string {
  return JSON.stringify(rows.map(rowJson));
}

export function auditTemplateJson(template: AuditTemplate): string {
  return JSON.stringify(rowJson(template));
}

/**
 * The INSERT of one event per row of `from` (aliased `r`, with the changed row's `id` and
 * `org_id`) for a change whose own statement is the only one that knows them, e.g. a revoke by
 * key id in one round trip: org and target id come from `r`, the details are the template's
 * merged with `detailsSql` (built from `r`), and the rest is the template, the JSON parameter
 * `$param` (auditTemplateJson).
 */
export function auditInsertPerRowSql(param: number, from: string, detailsSql: string): string {
  return `INSERT INTO audit_events (created_at, org_id, action, actor_type, actor_id, actor_source, credential_type, credential_id,
                                    target_type, target_id, client_address, user_agent, request_id, details)
          SELECT t.created_at, r.org_id, t.action, t.actor_type, t.actor_id, t.actor_source, t.credential_type, t.credential_id,
                 t.target_type, r.id, t.client_address, t.user_agent, t.request_id, t.details || ${detailsSql}
            FROM jsonb_populate_record(NULL::audit_events, $${param}::jsonb) t, ${from} r`;
}

export function auditInsertValues(row: NewAuditRow): unknown[] {
  return [
    row.createdAt,
    row.orgId,
    row.action,
    row.actorType,
    row.actorId,
    row.actorSource,
    row.credentialType,
    row.credentialId,
    row.targetType,
    row.targetId,
    row.clientAddress,
    row.userAgent,
    row.requestId,
    JSON.stringify(row.details),
  ];
}

/**
 * The audit log's table. Append-only: there is no update method, and the only delete is the
 * retention job's bounded batch, through a function that runs as the table's owner.
 */
@Injectable()
export class AuditRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Inside the caller's transaction, so the event commits with the change or not at all. */
  async insert(manager: EntityManager, row: NewAuditRow): Promise<void> {
    await manager.query(auditInsertSql(1), auditInsertValues(row));
  }

  /** One page, newest first: `limit + 1` rows after `after` (see common/pagination.ts). */
  async page(filter: AuditFilter, after: KeysetPosition | null, limit: number): Promise<AuditRow[]> {
    const { sql, values } = where(filter);
    let keyset = '';
    if (after) {
      values.push(after.createdAt, after.id);
      keyset = ` AND (created_at, id) < ($${values.length - 1}, $${values.length})`;
    }
    values.push(limit + 1);
    return this.db.query(
      `SELECT ${COLUMNS} FROM audit_events WHERE ${sql}${keyset} ORDER BY created_at DESC, id DESC LIMIT $${values.length}`,
      values,
    );
  }

  /** For exports: up to `limit` rows oldest first, strictly after `after`. */
  async batchAscending(filter: AuditFilter, after: KeysetPosition | null, limit: number): Promise<AuditRow[]> {
    const { sql, values } = where(filter);
    let keyset = '';
    if (after) {
      values.push(after.createdAt, after.id);
      keyset = ` AND (created_at, id) > ($${values.length - 1}, $${values.length})`;
    }
    values.push(limit);
    return this.db.query(
      `SELECT ${COLUMNS} FROM audit_events WHERE ${sql}${keyset} ORDER BY created_at, id LIMIT $${values.length}`,
      values,
    );
  }

  /** For a person's export: up to `limit` events with `actorId` as actor, in any org, oldest first, strictly after `after`. */
  async batchByActor(actorId: string, after: KeysetPosition | null, limit: number): Promise<AuditRow[]> {
    const values: unknown[] = [actorId, limit];
    const keyset = after ? ` AND (created_at, id) > ($3, $4)` : '';
    if (after) values.push(after.createdAt, after.id);
    return this.db.query(
      `SELECT ${COLUMNS} FROM audit_events WHERE actor_id = $1${keyset} ORDER BY created_at, id LIMIT $2`,
      values,
    );
  }

  /**
   * A person's erasure: their id becomes `pseudonym` wherever an event names it, and their e-mail
   * inside details `[erased]`, through the database's `audit_pseudonymise` function (migration
   * 1765400000000), the only UPDATE the log allows. Returns how many events it rewrote.
   */
  async pseudonymise(userId: string, pseudonym: string, email: string): Promise<number> {
    const [row] = await this.db.query<Array<{ changed: number }>>(`SELECT audit_pseudonymise($1, $2, $3) AS changed`, [
      userId,
      pseudonym,
      email,
    ]);
    return row.changed;
  }

  /**
   * Retention: deletes at most `batch` events older than `before` through the database's
   * `audit_prune` function (migration 1764910001000), the only way the service's role can
   * delete an event; it never deletes one younger than its floor. Returns how many were deleted.
   */
  async pruneBatch(before: Date, batch: number): Promise<number> {
    const [row] = await this.db.query<Array<{ deleted: number }>>(`SELECT audit_prune($1, $2) AS deleted`, [
      before,
      batch,
    ]);
    return row.deleted;
  }
}
