import {
  SETTING_COLUMNS,
  settingsEntity,
  type SettingsChange,
  type SettingsColumns,
} from '../../src/api-keys/key-settings.sql.js';
import { vi } from 'vitest';
import type { EntityManager } from 'typeorm';
import type { ApiKeyEntity } from '../../src/api-keys/api-key.entity.js';
import type { ApiKeyPolicyRepository } from '../../src/api-keys/api-key-policy.repository.js';
import type { KeyPolicyPort } from '../../src/api-keys/key-policy.port.js';
import type {
  ApiKeyWriteRepository,
  MintWrite,
  NewApiKey,
  RevokeWrite,
} from '../../src/api-keys/api-key-write.repository.js';
import type {
  ApiKeyRepository,
  KeyListFilter,
  KeyRow,
  LockedKey,
  NewSecret,
  RevokedKey,
} from '../../src/api-keys/api-key.repository.js';
import { KeyChanges } from '../../src/api-keys/key-changes.js';
import type { AuditEntry, AuditService } from '../../src/audit/audit.service.js';
import type { VerificationInvalidation } from '../../src/coherence/verification-invalidation.js';
import type { Transactions } from '../../src/database/transactions.js';
import { ActivityEvents, type ActivityEvent } from '../../src/events/activity-events.js';
import type { EventOutbox } from '../../src/events/event-outbox.js';
import type { OutboxEvent } from '../../src/events/event-types.js';

/*
 * In-memory stand-ins for the key store, the audit log and the outbox, for unit specs of the key
 * feature: the real unit of work (KeyChanges) runs over them (`keyChangesOverFakes`).
 */

/** What the unit of work wrote beside the keys: audit entries and outbox events, as the fakes saw them. */
export class Written {
  readonly audit: AuditEntry[] = [];
  readonly events: Array<Pick<OutboxEvent, 'type'> & Partial<OutboxEvent>> = [];
}

const inScope = (r: ApiKeyEntity, scope: 'user_id' | 'org_id' | 'id', owner: string) =>
  (scope === 'user_id' ? r.userId : scope === 'org_id' ? r.orgId : r.id) === owner;

/** A row's settings as the columns that hold them (the inverse of settingsEntity). */
function settingsColumnsOf(row: ApiKeyEntity): SettingsColumns {
  const columns: Record<string, unknown> = {};
  for (const [column, c] of Object.entries(SETTING_COLUMNS)) {
    const value = row[c.property];
    columns[column] = value instanceof Date ? value.toISOString() : value;
  }
  return columns;
}

const revokedKey = (row: ApiKeyEntity, alreadyRevoked: boolean): RevokedKey => ({
  id: row.id,
  orgId: row.orgId,
  userId: row.userId,
  name: row.name,
  alreadyRevoked,
  lookup: row.lookup,
  last4: row.last4,
  scopes: row.scopes,
  createdAt: row.createdAt,
  expiresAt: row.expiresAt,
  revokedAt: row.revokedAt,
});

/** The key tables in memory: the write repository's and the management repository's contracts. `failInserts` makes the next writes throw. */
export class FakeKeys {
  readonly rows: ApiKeyEntity[] = [];
  readonly inserted: NewApiKey[] = [];
  failInserts: unknown[] = [];
  listCalls: Array<{ userId: string; orgId: string | null }> = [];
  revokeCalls: Array<{ scope: string; owner: string; keyId: string; at: Date }> = [];

  constructor(private readonly written: Written) {}

  async mintWithinCap(write: MintWrite, cap: number): Promise<ApiKeyEntity | null> {
    const { key } = write;
    const active = this.rows.filter(
      (r) =>
        r.userId === key.userId &&
        r.orgId === key.orgId &&
        !r.revokedAt &&
        (!r.expiresAt || r.expiresAt > key.createdAt),
    );
    if (active.length >= cap) return null;
    this.inserted.push(key);
    const failure = this.failInserts.shift();
    if (failure) throw failure;
    const { settings, ...fields } = key;
    const row = {
      ...fields,
      createdBy: key.createdBy ?? null,
      approval: key.approval ?? null,
      lastUsedAt: null,
      revokedAt: null,
      previousLookup: null,
      previousKeyHash: null,
      previousExpiresAt: null,
      // The settings as the real mint writes them (the one mapper), absent ones at their defaults.
      ...settingsEntity(settings),
    } as ApiKeyEntity;
    this.rows.push(row);
    // One statement: the events are written with the key or not at all. The fake audit's prepare returns the entry itself.
    if (write.audit) this.written.audit.push(write.audit as never);
    if (write.event) this.written.events.push(write.event);
    return row;
  }

  async listOwned(userId: string, filter: KeyListFilter): Promise<KeyRow[]> {
    const { orgId, after, take } = filter;
    this.listCalls.push({ userId, orgId });
    return this.rows
      .filter((r) => r.userId === userId && (!orgId || r.orgId === orgId))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.id.localeCompare(a.id))
      .filter(
        (r) =>
          !after ||
          r.createdAt < after.createdAt ||
          (r.createdAt.getTime() === after.createdAt.getTime() && r.id < after.id),
      )
      .slice(0, take)
      .map((r) => ({ ...r, state: r.revokedAt ? 'revoked' : 'active' }));
  }

  async revokeWriting(
    scope: 'user_id' | 'org_id',
    owner: string,
    keyId: string,
    at: Date,
    write: RevokeWrite,
  ): Promise<RevokedKey | null> {
    this.revokeCalls.push({ scope, owner, keyId, at });
    const row = this.rows.find((r) => r.id === keyId && (scope === 'user_id' ? r.userId : r.orgId) === owner);
    if (!row) return null;
    const alreadyRevoked = row.revokedAt !== null;
    row.revokedAt ??= at;
    // As the statement does: the template's event with the org, the key and its name, and the event, only when revoked now.
    if (!alreadyRevoked && write.audit) {
      const template = write.audit.template as never as Omit<AuditEntry, 'orgId'>;
      this.written.audit.push({
        ...template,
        orgId: row.orgId,
        target: { ...template.target, id: row.id },
        details: { ...template.details, name: row.name },
      });
    }
    if (!alreadyRevoked && write.event)
      this.written.events.push({ type: 'api_key.revoked', data: { revoked_by: write.event.revokedBy } });
    return revokedKey(row, alreadyRevoked);
  }

  async revoke(scope: 'id', owner: string, keyId: string, at: Date): Promise<RevokedKey | null> {
    this.revokeCalls.push({ scope, owner, keyId, at });
    const row = this.rows.find((r) => r.id === keyId);
    if (!row) return null;
    const alreadyRevoked = row.revokedAt !== null;
    row.revokedAt ??= at;
    return revokedKey(row, alreadyRevoked);
  }

  async rotateOwned(
    userId: string,
    keyId: string,
    secret: NewSecret,
    now: Date,
    graceEndsAt: Date | null,
  ): Promise<ApiKeyEntity | null> {
    const row = this.rows.find(
      (r) => r.id === keyId && r.userId === userId && !r.revokedAt && (!r.expiresAt || r.expiresAt > now),
    );
    if (!row) return null;
    const failure = this.failInserts.shift();
    if (failure) throw failure;
    Object.assign(row, {
      previousLookup: graceEndsAt ? row.lookup : null,
      previousKeyHash: graceEndsAt ? row.keyHash : null,
      previousExpiresAt: graceEndsAt,
      ...secret,
    });
    return { ...row };
  }

  /** As the real statement: the scopes and settings of the key in the scope (the fake has no locks). */
  async lockForChange(scope: 'user_id' | 'org_id' | 'id', owner: string, keyId: string): Promise<LockedKey | null> {
    const row = this.rows.find((r) => r.id === keyId && inScope(r, scope, owner));
    return row ? { ...row, scopes: [...row.scopes] } : null;
  }

  /** The settings' columns written to the row as the real UPDATE writes them (the one mapper's names). */
  async updateSettings(
    scope: 'user_id' | 'org_id' | 'id',
    owner: string,
    keyId: string,
    change: SettingsChange,
  ): Promise<ApiKeyEntity | null> {
    const row = this.rows.find((r) => r.id === keyId && inScope(r, scope, owner));
    if (!row) return null;
    const { scopes, ...columns } = change;
    if (scopes !== undefined) row.scopes = scopes as ApiKeyEntity['scopes'];
    if (typeof columns.name === 'string') row.name = columns.name;
    Object.assign(row, settingsEntity({ ...settingsColumnsOf(row), ...columns }), { creditsEpoch: row.creditsEpoch });
    if ('credits_remaining' in columns) row.creditsEpoch++;
    return { ...row };
  }

  async keyStanding(
    userId: string,
    keyId: string,
  ): Promise<{ revokedAt: Date | null; expiresAt: Date | null; orgId: string } | null> {
    const row = this.rows.find((r) => r.id === keyId && r.userId === userId);
    return row ? { revokedAt: row.revokedAt, expiresAt: row.expiresAt, orgId: row.orgId } : null;
  }
}

/** Runs the work with a stand-in manager, as one transaction would. */
export const fakeTransactions = { run: <T>(work: (m: EntityManager) => Promise<T>) => work({} as EntityManager) };

export class FakeAudit {
  constructor(private readonly written: Written) {}
  async record(_manager: EntityManager, entry: AuditEntry): Promise<void> {
    this.written.audit.push(entry);
  }
  /** Stands in for the row: the repository fake records it only when the key is written. */
  prepare(entry: AuditEntry): AuditEntry {
    return entry;
  }
  prepareTemplate(entry: Omit<AuditEntry, 'orgId' | 'target'>): Omit<AuditEntry, 'orgId'> {
    const { withOwner: _, ...template } = entry as Omit<AuditEntry, 'orgId'> & { withOwner?: boolean };
    return template;
  }
}

/** The outbox port: `enabled` as the test sets it; what was written in a transaction and how often the relay was woken. */
export class FakeOutbox {
  enabled = true;
  woken = 0;
  constructor(private readonly log: Written) {}
  async write(_manager: EntityManager, event: OutboxEvent): Promise<void> {
    if (this.enabled) this.log.events.push(event);
  }
  written(): void {
    this.woken++;
  }
}

/** The real KeyChanges over the fakes, with what it wrote, woke and signalled. */
export function keyChangesOverFakes() {
  const written = new Written();
  const keys = new FakeKeys(written);
  const outbox = new FakeOutbox(written);
  const signals: ActivityEvent[] = [];
  const activity = new ActivityEvents();
  activity.on((e) => signals.push(e));
  const invalidation = { awaitAcknowledged: vi.fn(async () => undefined) };
  const changes = new KeyChanges(
    keys as never as ApiKeyWriteRepository,
    keys as never as ApiKeyRepository,
    fakeTransactions as Transactions,
    new FakeAudit(written) as never as AuditService,
    outbox as never as EventOutbox,
    invalidation as never as VerificationInvalidation,
    activity,
    keys as never as ApiKeyPolicyRepository,
  );
  return { changes, keys, written, outbox, signals, invalidation };
}

/** The org key policy port of an org that set none: everything allowed, nothing held for approval. */
export const noKeyPolicy: KeyPolicyPort = {
  judgeMint: async () => ({ pending: false }),
  judgeRotation: async () => undefined,
};
