/*
 * The audit log: who changed what in an org, from where, with which credential.
 *
 * Recording (for any feature that changes something):
 *
 *   await this.transactions.run(async (manager) => {
 *     ...the change, through repositories that take `manager`...
 *     await this.audit.record(manager, {
 *       orgId, action: 'api_key.revoked',            // an AuditAction (audit-actions.ts; add new ones there)
 *       ...actorOf(principal),                       // { actor: user, credential: session | api_key }
 *       target: { type: 'api_key', id: keyId },
 *       details: { name },                           // never a secret: key, hash, token, webhook secret...
 *     });
 *   });
 *
 * - `record` runs in the caller's transaction: the event commits with the change or not at all.
 *   It throws only when the database fails (and then the whole change fails with it); anything
 *   else wrong with an entry (unserialisable details, a field that is not a UUID) is logged and
 *   mended or skipped, never thrown.
 * - Client address, user agent and request id come from the current request's origin
 *   (common/request-context.ts), entered by RequestOriginInterceptor on the controller;
 *   outside a request (CLI, jobs) they are absent. The request id is the service's own; a
 *   caller's X-Request-Id is kept as `details.client_request_id`.
 * - `details` is scrubbed again here (credential-shaped text and fields named like secrets are
 *   replaced) and capped at 4 KiB, as a second line of defence.
 * - Events are append-only: the table's trigger refuses UPDATE and DELETE; only `prune` (the
 *   retention job, AUDIT_RETENTION_DAYS) deletes, in bounded batches, and only `pseudonymise` (a
 *   person's erasure) rewrites the ids and e-mail of one person.
 */
import { Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { decodeCursor, pageOf, MAX_PAGE_LIMIT, type KeysetPosition } from '../common/pagination.js';
import { isUuid } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { currentRequestOrigin, scrubCredentials } from '../common/request-context.js';
import { toStorableText } from '../common/storable-text.js';
import type { AuditAction } from './audit-actions.js';
import {
  AuditRepository,
  type AuditFilter,
  type AuditRow,
  type AuditTemplate,
  type NewAuditRow,
} from './audit.repository.js';
import type { AuditEventDto } from './dto/audit-event.dto.js';

/** The event as `GET /orgs/{org_id}/audit-events` and `audit export` show it: the DTO class itself. */
export type AuditEventRecord = AuditEventDto;

export type AuditActorType = 'user' | 'operator' | 'system';

export interface AuditActor {
  type: AuditActorType;
  /** The user's id for `user`; null for the operator CLI and the system. */
  id: string | null;
  /** Where a non-user actor acted from, e.g. `cli` or `retention`. */
  source?: string;
}

export interface AuditCredential {
  type: 'session' | 'api_key';
  /** The key's id for `api_key`; null for a session. */
  id: string | null;
}

export interface AuditEntry {
  orgId: string;
  action: AuditAction;
  actor: AuditActor;
  credential?: AuditCredential;
  target: { type: string; id: string };
  /** What changed; never a secret. */
  details: Record<string, unknown>;
}

/** Who makes a change, as the audit log records it: a signed-in caller (actorOf) or the operator CLI (OPERATOR). */
export type ChangeActor = Pick<AuditEntry, 'actor' | 'credential'>;

/** The actor and credential of a change made by a signed-in caller. */
export function actorOf(principal: Principal): { actor: AuditActor; credential: AuditCredential } {
  return {
    actor: { type: 'user', id: principal.userId },
    // A service key is an API key as a credential.
    credential: { type: principal.kind === 'session' ? 'session' : 'api_key', id: principal.keyId ?? null },
  };
}

/** The operator CLI as an actor. */
export const OPERATOR: { actor: AuditActor } = { actor: { type: 'operator', id: null, source: 'cli' } };

const MAX_DETAILS_BYTES = 4096;
const SECRET_FIELD = /(^|_)(key|secret|token|password|hash|authorization)$/i;
const DEFAULT_RETENTION_BATCH = 1000;
/** A pruning run stops after this many batches; the next run carries on. */
const MAX_BATCHES_PER_RUN = 100;

export function toAuditEventRecord(row: AuditRow): AuditEventRecord {
  const record: AuditEventRecord = {
    id: row.id,
    created_at: row.createdAt.toISOString(),
    org_id: row.orgId,
    action: row.action,
    actor: { type: row.actorType },
    target: { type: row.targetType, id: row.targetId },
    details: row.details,
  };
  if (row.actorId) record.actor.id = row.actorId;
  if (row.actorSource) record.actor.source = row.actorSource;
  if (row.credentialType)
    record.credential = row.credentialId
      ? { type: row.credentialType, id: row.credentialId }
      : { type: row.credentialType };
  if (row.clientAddress) record.client_address = row.clientAddress;
  if (row.userAgent) record.user_agent = row.userAgent;
  if (row.requestId) record.request_id = row.requestId;
  return record;
}

export interface AuditListQuery {
  limit?: number;
  cursor?: string;
  action?: string;
  actor_id?: string;
  target_id?: string;
  since?: string;
  until?: string;
}

@Injectable()
export class AuditService {
  private readonly logger = new Logger(AuditService.name);

  constructor(
    private readonly events: AuditRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  /** `GET /orgs/{org_id}/audit-events`: owners and admins only (403), not a member 404. */
  async list(
    principal: Principal,
    orgId: string,
    query: AuditListQuery,
  ): Promise<{ events: AuditEventRecord[]; next_cursor?: string }> {
    await requireOrgAdmin(this.directory, principal, orgId);
    return this.page(orgId, query);
  }

  /** Records one event in the caller's transaction. Rejects only when the database does. */
  async record(manager: EntityManager, entry: AuditEntry): Promise<void> {
    const row = this.prepare(entry);
    if (row) await this.events.insert(manager, row);
  }

  /**
   * The row `record` would insert (origin, scrubbed details), for a repository that writes the
   * event in the same statement as its change (audit.repository.ts, auditInsertSql); null when
   * the entry is unusable (logged, as `record` does).
   */
  prepare(entry: AuditEntry): NewAuditRow | null {
    const template = this.template(entry, [entry.orgId, entry.target?.id]);
    return template ? { ...template, orgId: entry.orgId.toLowerCase(), targetId: entry.target.id.toLowerCase() } : null;
  }

  /**
   * The same without the org and the target's id, for a change whose own statement is the only
   * one that knows them (auditInsertPerRowSql: a revoke by key id, in one round trip). The
   * statement adds details only from the changed row, scrubbed as `safeDetails` would.
   */
  prepareTemplate(entry: Omit<AuditEntry, 'orgId' | 'target'> & { target: { type: string } }): AuditTemplate | null {
    return this.template(entry, []);
  }

  /** The entry's validated constant part; `more` are further ids it must carry as UUIDs. */
  private template(
    entry: Omit<AuditEntry, 'orgId' | 'target'> & { target: { type: string } },
    more: unknown[],
  ): AuditTemplate | null {
    const ids = [...more, entry.actor?.id, entry.credential?.id].filter((v) => v !== null && v !== undefined);
    if (!ids.every(isUuid) || !entry.action || !entry.actor?.type || !entry.target?.type) {
      // A bug in the caller, not a reason to fail the change it records.
      this.logger.error(`audit event ${String(entry.action)} not recorded: an id is not a UUID or a field is missing`);
      return null;
    }
    const origin = currentRequestOrigin();
    return {
      createdAt: this.settings.clock.now(),
      action: entry.action,
      actorType: entry.actor.type,
      actorId: entry.actor.id?.toLowerCase() ?? null,
      actorSource: entry.actor.source ?? null,
      credentialType: entry.credential?.type ?? null,
      credentialId: entry.credential?.id?.toLowerCase() ?? null,
      targetType: entry.target.type,
      clientAddress: origin?.clientAddress ?? null,
      userAgent: origin?.userAgent ?? null,
      requestId: origin?.requestId ?? null,
      // The caller's X-Request-Id goes beside the service's own id, never in its place.
      details: this.safeDetails(
        entry.action,
        origin?.clientRequestId ? { ...entry.details, client_request_id: origin.clientRequestId } : entry.details,
      ),
    };
  }

  /** One page of an org's events, newest first. The caller's right to read them is checked by the caller. */
  async page(orgId: string, query: AuditListQuery): Promise<{ events: AuditEventRecord[]; next_cursor?: string }> {
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const limit = query.limit ?? MAX_PAGE_LIMIT;
    const rows = await this.events.page(this.filter(orgId, query), after, limit);
    const { items, nextCursor } = pageOf(rows, limit);
    const body: { events: AuditEventRecord[]; next_cursor?: string } = { events: items.map(toAuditEventRecord) };
    if (nextCursor) body.next_cursor = nextCursor;
    return body;
  }

  /** Every event of an org in a time range, oldest first, read in bounded batches (never the whole log at once). */
  async *exportEvents(orgId: string, since?: Date, until?: Date, batch = 500): AsyncGenerator<AuditEventRecord[]> {
    let after: KeysetPosition | null = null;
    for (;;) {
      const rows = await this.events.batchAscending({ orgId, since, until }, after, batch);
      if (rows.length > 0) yield rows.map(toAuditEventRecord);
      if (rows.length < batch) return;
      after = rows[rows.length - 1];
    }
  }

  /** Every event a user acted in, in any org, oldest first, in bounded batches (a person's export). */
  async *exportByActor(userId: string, batch = 500): AsyncGenerator<AuditEventRecord[]> {
    let after: KeysetPosition | null = null;
    for (;;) {
      const rows = await this.events.batchByActor(userId, after, batch);
      if (rows.length > 0) yield rows.map(toAuditEventRecord);
      if (rows.length < batch) return;
      after = rows[rows.length - 1];
    }
  }

  /** A person's erasure: their id replaced by `pseudonym` and their e-mail removed in every event (AuditRepository.pseudonymise). */
  pseudonymise(userId: string, pseudonym: string, email: string): Promise<number> {
    return this.events.pseudonymise(userId, pseudonym, email);
  }

  /**
   * Deletes events older than the retention period in bounded batches; returns how many.
   * `batch` and `maxBatches` bound one run; the periodic job calls it again later.
   */
  async prune(batch = DEFAULT_RETENTION_BATCH, maxBatches = MAX_BATCHES_PER_RUN): Promise<number> {
    const days = this.settings.auditRetentionDays;
    if (days <= 0) return 0;
    const before = new Date(this.settings.clock.now().getTime() - days * 86_400_000);
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const deleted = await this.events.pruneBatch(before, batch);
      total += deleted;
      if (deleted < batch) break;
    }
    return total;
  }

  private filter(orgId: string, query: AuditListQuery): AuditFilter {
    return {
      orgId,
      action: query.action,
      actorId: query.actor_id?.toLowerCase(),
      targetId: query.target_id?.toLowerCase(),
      since: query.since === undefined ? undefined : new Date(query.since),
      until: query.until === undefined ? undefined : new Date(query.until),
    };
  }

  /** Details as stored: credential-shaped text scrubbed, secret-named fields dropped, at most 4 KiB. */
  private safeDetails(action: string, details: Record<string, unknown> | undefined): Record<string, unknown> {
    try {
      const json = JSON.stringify(details ?? {}, (name, value: unknown) => {
        if (name && SECRET_FIELD.test(name)) return '[REDACTED]';
        // jsonb refuses NUL and unpaired surrogates: a detail must never fail the change it describes.
        if (typeof value === 'string') return toStorableText(scrubCredentials(value));
        if (typeof value === 'bigint') return value.toString();
        return value;
      });
      if (json === undefined || !json.startsWith('{')) return {};
      if (Buffer.byteLength(json) > MAX_DETAILS_BYTES) return { truncated: true };
      return JSON.parse(json) as Record<string, unknown>;
    } catch (error) {
      this.logger.warn(`audit event ${action}: details could not be serialised (${(error as Error).message})`);
      return { unserialisable: true };
    }
  }
}
