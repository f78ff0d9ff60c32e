import { Injectable, NotFoundException, NotImplementedException } from '@nestjs/common';
import { ApiKeyRepository } from '../api-keys/api-key.repository.js';
import { toApiKeyRecord } from '../api-keys/api-key.record.js';
import { ApiKeysService } from '../api-keys/api-keys.service.js';
import { AuditService, type AuditActor } from '../audit/audit.service.js';
import { afterCommit } from '../coherence/change-tail.js';
import { VerificationInvalidation } from '../coherence/verification-invalidation.js';
import { ERRORS } from '../common/error-messages.js';
import type { KeysetPosition } from '../common/pagination.js';
import { Transactions } from '../database/transactions.js';
import { EventOutbox } from '../events/event-outbox.js';
import { Settings } from '../settings/settings.js';
import type { ErasureDto } from './dto/personal-data.dto.js';
import {
  PersonalDataRepository,
  type MeterUsagePosition,
  type PersonRow,
  type UsagePosition,
} from './personal-data.repository.js';
import { Pseudonyms, tombstoneEmail } from './pseudonym.js';

const BATCH = 500;

/** The operator through the admin API as an actor (the CLI is audit's OPERATOR). */
export const API_OPERATOR: AuditActor = { type: 'operator', id: null, source: 'admin_api' };

/**
 * A person's data on request, for the operator (never an org admin): the export of everything the
 * service holds about a user, and their erasure. Both are idempotent. An erasure runs in steps
 * ordered so that a second run after a crash completes it: (1) every key revoked and every key's
 * metadata cleared, (2) each membership removed with its `user.erased` event (one transaction
 * per org), (3) the audit log
 * pseudonymised (it needs the e-mail, so it comes first), (4) the e-mail replaced by the tombstone.
 */
@Injectable()
export class PersonalDataService {
  constructor(
    private readonly people: PersonalDataRepository,
    private readonly keys: ApiKeyRepository,
    private readonly apiKeys: ApiKeysService,
    private readonly audit: AuditService,
    private readonly transactions: Transactions,
    private readonly outbox: EventOutbox,
    private readonly invalidation: VerificationInvalidation,
    private readonly settings: Settings,
  ) {}

  /**
   * The export as one JSON document, written in pieces (keys, audit events and usage are read in
   * keyset batches, never whole). 404 for an unknown user, before the first piece.
   */
  async exportDocument(userId: string): Promise<AsyncIterable<string>> {
    const user = await this.people.findUser(userId);
    if (!user) throw new NotFoundException(ERRORS.userNotFound(userId));
    return this.document(user);
  }

  async erase(userId: string, actor: AuditActor): Promise<ErasureDto> {
    if (!this.settings.apiKeySecret) throw new NotImplementedException(ERRORS.erasureNeedsSecret);
    const pseudonym = new Pseudonyms(this.settings.apiKeySecret).of(userId);
    const user = await this.people.findUser(userId);
    if (!user) throw new NotFoundException(ERRORS.userNotFound(userId));
    const tombstone = tombstoneEmail(user.id);

    const keysRevoked = await this.apiKeys.revokeAllOfUser(user.id, actor);
    await this.keys.clearMetadataOfUser(user.id);

    const orgs: string[] = [];
    for (const membership of await this.people.memberships(user.id)) {
      const at = this.settings.clock.now();
      const left = await this.transactions.run(async (m) => {
        const removed = await this.people.leaveOrg(membership.org_id, user.id, m);
        if (!removed) return false;
        await this.audit.record(m, {
          orgId: membership.org_id,
          action: 'user.erased',
          actor,
          target: { type: 'user', id: user.id },
          details: { role: removed.role },
        });
        const data = { org_id: membership.org_id, user_id: user.id, role: removed.role, removed_at: at.toISOString() };
        await this.outbox.write(m, { orgId: membership.org_id, type: 'member.removed', data, at });
        return true;
      });
      if (left) orgs.push(membership.org_id);
    }
    await this.people.dropWorkspaces(user.id);
    // A removed membership stops the person's sessions in that org on every instance first.
    if (orgs.length > 0) await afterCommit(this.outbox, this.invalidation, { wroteEvents: true, narrows: true });

    const pseudonymised = await this.audit.pseudonymise(user.id, pseudonym, user.email);
    await this.people.tombstone(user.id, tombstone);
    return {
      user_id: user.id,
      email: tombstone,
      keys_revoked: keysRevoked,
      orgs_left: orgs,
      audit_events_pseudonymised: pseudonymised,
    };
  }

  private async *document(user: PersonRow): AsyncGenerator<string> {
    const now = this.settings.clock.now();
    const [memberships, workspaces] = await Promise.all([
      this.people.memberships(user.id),
      this.people.workspaces(user.id),
    ]);
    const head = {
      exported_at: now.toISOString(),
      user: { id: user.id, email: user.email, created_at: user.created_at.toISOString() },
      memberships: memberships.map((m) => ({
        org_id: m.org_id,
        org_name: m.org_name,
        role: m.role,
        joined_at: m.joined_at.toISOString(),
      })),
      workspaces: workspaces.map((w) => ({ id: w.id, org_id: w.org_id, created_at: w.created_at.toISOString() })),
    };
    yield `${JSON.stringify(head).slice(0, -1)},"api_keys":[`;
    yield* this.list(this.keyBatches(user.id, now));
    yield '],"audit_events":[';
    yield* this.list(this.audit.exportByActor(user.id, BATCH));
    yield '],"usage_attribution":[';
    yield* this.list(this.usageBatches(user.id));
    yield '],"usage_meters":[';
    yield* this.list(this.meterUsageBatches(user.id));
    yield ']}\n';
  }

  /** The items of batches as the inside of a JSON array. */
  private async *list(batches: AsyncIterable<object[]>): AsyncGenerator<string> {
    let first = true;
    for await (const batch of batches) {
      if (batch.length === 0) continue;
      yield `${first ? '' : ','}${batch.map((item) => JSON.stringify(item)).join(',')}`;
      first = false;
    }
  }

  /** Every key of the person, newest first, masked as the key list shows it (never a hash or secret), with its state. */
  private async *keyBatches(userId: string, now: Date): AsyncGenerator<object[]> {
    for (let after: KeysetPosition | null = null; ;) {
      const page = await this.keys.listOwned(userId, { orgId: null, state: null, after, take: BATCH, now });
      yield page.map((k) => ({ ...toApiKeyRecord(k, now), state: k.state }));
      if (page.length < BATCH) return;
      after = page[page.length - 1];
    }
  }

  private async *meterUsageBatches(userId: string): AsyncGenerator<object[]> {
    for (let after: MeterUsagePosition | null = null; ;) {
      const rows = await this.people.meterUsageBatch(userId, after, BATCH);
      yield rows;
      if (rows.length < BATCH) return;
      after = rows[rows.length - 1];
    }
  }

  private async *usageBatches(userId: string): AsyncGenerator<object[]> {
    for (let after: UsagePosition | null = null; ;) {
      const rows = await this.people.usageBatch(userId, after, BATCH);
      yield rows;
      if (rows.length < BATCH) return;
      after = rows[rows.length - 1];
    }
  }
}
