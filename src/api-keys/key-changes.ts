/*
 * The unit of work of every key change. A change, its audit event and its outbox events commit
 * together, by one of two strategies chosen per operation:
 *
 * - one statement (mint, revoke by owner or org admin; ApiKeyWriteRepository): the change and both
 *   events are one SQL statement and one round trip (api-key.sql.ts: MINT_BATCH_SQL / mintSql,
 *   revokeWritingSql), measured faster on the benchmarked mint and revoke routes than a
 *   transaction of four statements;
 * - one transaction (rotate, leaked revoke, the org key policy's changes: the lifetime cut, approval
 *   decisions, the stale sweep; ApiKeyRepository, ApiKeyPolicyRepository): `transact` runs the
 *   change on the transaction's manager, then AuditService.record and EventOutbox.write.
 *
 * Either way the commit is followed by one tail (`committed`: afterCommit, the same for directory
 * changes, then the in-process activity signal). The changes' shapes are in key-change.types.ts. Changes that draw a new secret retry a lookup collision (23505)
 * in one place (`drawing`). A new kind of key change is one more method here: its change as a
 * repository call, its audit entry and its event, then `transact` and `committed`.
 */
import { ForbiddenException, Injectable } from '@nestjs/common';
import { ERRORS } from '../common/error-messages.js';
import type { EntityManager } from 'typeorm';
import { AuditService, type AuditEntry } from '../audit/audit.service.js';
import { afterCommit } from '../coherence/change-tail.js';
import { VerificationInvalidation } from '../coherence/verification-invalidation.js';
import { Transactions } from '../database/transactions.js';
import { ActivityEvents, type ActivityEvent } from '../events/activity-events.js';
import { EventOutbox } from '../events/event-outbox.js';
import type { OutboxEvent } from '../events/event-types.js';
import type { ApiKeyEntity } from './api-key.entity.js';
import { controlsIn, controlsSetByAfter, liftedControl } from './control-owners.js';
import { ApiKeyWriteRepository } from './api-key-write.repository.js';
import { ApiKeyRepository, type RevokedKey } from './api-key.repository.js';
import { ApiKeyPolicyRepository } from './api-key-policy.repository.js';
import type {
  DecisionChange,
  Drawn,
  LeakedRevokeChange,
  MintChange,
  PolicyChange,
  RevokeChange,
  RotateChange,
  StaleRevokeChange,
  StaleWarning,
  UpdateChange,
} from './key-change.types.js';

const MAX_DRAWS = 4;

@Injectable()
export class KeyChanges {
  constructor(
    private readonly statements: ApiKeyWriteRepository,
    private readonly keys: ApiKeyRepository,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly outbox: EventOutbox,
    private readonly invalidation: VerificationInvalidation,
    private readonly activity: ActivityEvents,
    private readonly policyKeys: ApiKeyPolicyRepository,
  ) {}

  /** One statement (ApiKeyWriteRepository.mintWithinCap); null when the owner is at the cap. A new key narrows nothing: no wait. */
  async mint(draw: () => Drawn<MintChange>): Promise<{ key: ApiKeyEntity; secret: string } | null> {
    const minted = await this.drawing(draw, async ({ change, audit, event }) => {
      const write = { key: change.key, audit: this.audit.prepare(audit), event: this.outbox.enabled ? event : null };
      return this.statements.mintWithinCap(write, change.cap);
    });
    if (minted.written) await this.committed({ type: 'api_key.minted' }, 1, false);
    return minted.written ? { key: minted.written, secret: minted.secret } : null;
  }

  /** One statement (ApiKeyWriteRepository.revokeWriting); null for no such key in the scope. Already revoked: found, nothing written. */
  async revoke({ change, audit, event }: RevokeChange): Promise<RevokedKey | null> {
    const template = this.audit.prepareTemplate(audit);
    const revoked = await this.statements.revokeWriting(change.scope, change.owner, change.keyId, change.at, {
      audit: template ? { template, withOwner: audit.withOwner } : null,
      event: this.outbox.enabled ? event : null,
    });
    // The 204 means "refused everywhere": every instance answering from its cache has applied it.
    if (revoked) await this.committed({ type: 'api_key.revoked' }, 1, true);
    return revoked;
  }

  /** One transaction; null when the caller has no active key of that id. It ends an older grace period: waits for every instance. */
  async rotate(draw: () => Drawn<RotateChange>): Promise<{ key: ApiKeyEntity; secret: string } | null> {
    const rotated = await this.drawing(draw, ({ change: c, audit, event }) =>
      this.transact(
        (m) => this.keys.rotateOwned(c.userId, c.keyId, c.secret, c.now, c.graceEndsAt, m),
        audit,
        (k) => [event(k)],
      ),
    );
    if (rotated.written) await this.committed({ type: 'api_key.rotated' }, 1, true);
    return rotated.written ? { key: rotated.written, secret: rotated.secret } : null;
  }

  /**
   * A key's settings (name, enabled, limits, credits, networks, metadata): one transaction; null
   * for no such key in the scope. Disabling or narrowing changes what verifies, and every change
   * reaches the cached rows enforcement reads: waits for every instance, as a revoke does. The
   * key's owner may only narrow a control an admin set (control-owners.ts; 403 naming it), and
   * the change records who set each control it sends.
   */
  async update({ change: c, audit, event }: UpdateChange): Promise<ApiKeyEntity | null> {
    let before: string[] | null = null;
    const updated = await this.transact(
      async (m) => {
        const narrowed = c.settings.scopes;
        const controls = controlsIn(c.settings).length > 0;
        let settings = c.settings;
        if (narrowed !== undefined || controls) {
          // Under the row's lock, so a concurrent change cannot slip a scope or a control in between check and write.
          const held = await this.keys.lockForChange(c.scope, c.owner, c.keyId, m);
          if (held === null) return null;
          if (narrowed !== undefined) {
            before = held.scopes;
            const widened = narrowed.filter((s) => !held.scopes.includes(s));
            if (widened.length > 0) throw new ForbiddenException(ERRORS.keyNeverWidened(widened));
          }
          if (controls) {
            const lifted = c.by === 'owner' ? liftedControl(held, c.settings, c.at) : null;
            if (lifted) throw new ForbiddenException(lifted);
            settings = { ...settings, controls_set_by: controlsSetByAfter(held.controlsSetBy, c.settings, c.by) };
          }
        }
        return this.keys.updateSettings(c.scope, c.owner, c.keyId, settings, m);
      },
      (k) => audit(k, before),
      (k) => event(k, before),
    );
    if (updated) await this.committed({ type: 'api_key.updated' }, 1, true);
    return updated;
  }

  /**
   * Keys reported as leaked, whoever owns them: each in its own transaction (one bad key cannot
   * undo the others), audited and announced only when revoked now; one wait for all. Returns the keys found.
   */
  async revokeLeaked(changes: LeakedRevokeChange[]): Promise<RevokedKey[]> {
    return this.revokeEach(
      'id',
      changes.map((c) => ({ ...c, owner: c.change.keyId })),
    );
  }

  /**
   * Keys of one owner revoked at once (a person's erasure), the same way: each in its own
   * transaction, audited and announced only when revoked now; one wait for all. Returns the keys found.
   */
  async revokeOwnerKeys(ownerId: string, changes: LeakedRevokeChange[]): Promise<RevokedKey[]> {
    return this.revokeEach(
      'user_id',
      changes.map((c) => ({ ...c, owner: ownerId })),
    );
  }

  private async revokeEach(
    scope: 'id' | 'user_id',
    changes: Array<LeakedRevokeChange & { owner: string }>,
  ): Promise<RevokedKey[]> {
    const found: RevokedKey[] = [];
    for (const { change, owner, audit, events } of changes) {
      const key = await this.transact(
        (m) => this.keys.revoke(scope, owner, change.keyId, change.at, m),
        (k) => (k.alreadyRevoked ? null : audit(k)),
        (k) => (k.alreadyRevoked ? [] : events(k)),
      );
      if (key) found.push(key);
    }
    const revokedNow = found.filter((k) => !k.alreadyRevoked).length;
    if (found.length > 0) await this.committed({ type: 'api_key.revoked' }, revokedNow, true);
    return found;
  }

  /**
   * An org key policy and the keys it shortens, in one transaction: the policy, the org's keys
   * that outlive its lifetime cut to it, the audit event and the events. Waits for every instance
   * (a shortened key may be cached), so the policy holds everywhere once this returns.
   */
  async applyPolicy({ policy, change, audit, events }: PolicyChange): Promise<RevokedKey[]> {
    const shortened = await this.transactions.run(async (manager) => {
      await policy(manager);
      const keys =
        change.maxLifetimeDays === null
          ? []
          : await this.policyKeys.capLifetime(change.orgId, change.maxLifetimeDays, change.now, manager);
      await this.audit.record(manager, audit(keys));
      for (const event of events(keys)) await this.outbox.write(manager, event);
      return keys;
    });
    await this.committed({ type: 'api_key.revoked' }, 0, shortened.length > 0);
    return shortened;
  }

  /** Approves or denies a pending key; null when the org has no such pending key. A denial waits for every instance. */
  async decide({ change: c, audit, event }: DecisionChange): Promise<RevokedKey | null> {
    const decided = await this.transact(
      (m) => this.policyKeys.decide(c.orgId, c.keyId, c.decision, c.at, m),
      audit,
      (k) => [event(k)],
    );
    if (decided)
      await this.committed(
        { type: c.decision === 'deny' ? 'api_key.revoked' : 'api_key.minted' },
        1,
        c.decision === 'deny',
      );
    return decided;
  }

  /** Warns of coming stale revokes, once per key and idle period whichever instance runs it; returns how many. */
  async warnStale({ change: c, event }: StaleWarning): Promise<number> {
    const warned = await this.transactions.run(async (manager) => {
      const keys = await this.policyKeys.warnStale(c.orgId, c.idleSince, c.now, c.limit, manager);
      for (const key of keys) await this.outbox.write(manager, event(key));
      return keys.length;
    });
    if (warned > 0) this.outbox.written();
    return warned;
  }

  /** Stale keys revoked, each in its own transaction and only if still stale (so once, whoever runs it); returns how many. */
  async revokeStale(changes: StaleRevokeChange[]): Promise<number> {
    let revoked = 0;
    for (const { change: c, audit, event } of changes) {
      const key = await this.transact(
        (m) => this.policyKeys.revokeStale(c.orgId, c.keyId, c.idleSince, c.at, m),
        audit,
        (k) => [event(k)],
      );
      if (key) revoked++;
    }
    if (revoked > 0) await this.committed({ type: 'api_key.revoked' }, revoked, true);
    return revoked;
  }

  /** The transaction strategy: the change, then (if it changed something) its audit event and outbox events. */
  private transact<K>(
    change: (manager: EntityManager) => Promise<K | null>,
    audit: (changed: K) => AuditEntry | AuditEntry[] | null,
    events: (changed: K) => OutboxEvent[],
  ): Promise<K | null> {
    return this.transactions.run(async (manager) => {
      const changed = await change(manager);
      if (changed === null) return null;
      const entries = audit(changed);
      for (const entry of Array.isArray(entries) ? entries : entries ? [entries] : [])
        await this.audit.record(manager, entry);
      for (const event of events(changed)) await this.outbox.write(manager, event);
      return changed;
    });
  }

  /** The tail of every committed key change (afterCommit, shared with directory changes), then the in-process signal `times` times. */
  private async committed(signal: ActivityEvent, times: number, narrows: boolean): Promise<void> {
    await afterCommit(this.outbox, this.invalidation, { wroteEvents: true, narrows });
    for (let i = 0; i < times; i++) this.activity.emit(signal);
  }

  /** Writes a freshly drawn change; a lookup collision (71 random bits: all but impossible) draws again rather than fails. */
  private async drawing<C extends { secret: string }, R>(
    draw: () => C,
    write: (change: C) => Promise<R | null>,
  ): Promise<{ written: R | null; secret: string }> {
    for (let attempt = 1; ; attempt++) {
      const change = draw();
      try {
        return { written: await write(change), secret: change.secret };
      } catch (error) {
        if ((error as { code?: string }).code === '23505' && attempt < MAX_DRAWS) continue;
        throw error;
      }
    }
  }
}
