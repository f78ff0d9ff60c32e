import { randomUUID } from 'node:crypto';
import { ConflictException, ForbiddenException, Injectable, NotFoundException, Optional } from '@nestjs/common';
import { generateApiKey, hashApiKey } from '../auth/api-key-format.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf } from '../common/pagination.js';
import { VerificationInvalidation } from '../auth/verification-cache/verification-invalidation.js';
import { roleCeiling, SCOPES, type Scope } from '../common/roles.js';
import { ActivityEvents } from '../events/activity-events.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { actorOf, AuditService } from '../audit/audit.service.js';
import { Transactions } from '../database/transactions.js';
import { EventOutbox } from '../events/event-outbox.js';
import { keyEventData } from '../events/event-types.js';
import { ApiKeyRepository, type KeyState } from './api-key.repository.js';
import { toApiKeyRecord, type ApiKeyRecord, type MintedApiKey, type OrgApiKeyRecord } from './api-key.record.js';
import type { ListOrgApiKeysQuery } from './dto/list-org-api-keys.query.js';
import { DEFAULT_GRACE_PERIOD_SECONDS, type RotateApiKeyDto } from './dto/rotate-api-key.dto.js';
import type { MintApiKeyDto } from './dto/mint-api-key.dto.js';
import { ERRORS } from '../common/error-messages.js';

const DAY_MS = 86_400_000;

export interface KeyListQuery {
  orgId: string | null;
  state?: KeyState | null;
  limit?: number;
  cursor?: string;
}

@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly invalidation: VerificationInvalidation,
    @Optional() private readonly activity?: ActivityEvents,
    @Optional() private readonly outbox?: EventOutbox,
  ) {}

  async mint(principal: Principal, dto: MintApiKeyDto): Promise<MintedApiKey> {
    const orgId = dto.org_id.toLowerCase();
    const standing = await this.directory.mintStanding(principal.userId, orgId);
    if (!standing) throw new NotFoundException(ERRORS.orgNotFound);

    // Omitted or [] means read-only; duplicates collapse; stored in canonical order.
    const asked: Scope[] = dto.scopes && dto.scopes.length > 0 ? dto.scopes : ['decisions:read'];
    const scopes = SCOPES.filter((s) => asked.includes(s));
    const ceiling = roleCeiling(standing.role);
    const above = scopes.filter((s) => !ceiling.includes(s));
    if (above.length > 0) {
      throw new ForbiddenException(ERRORS.roleCannotGrant(standing.role, above, ceiling));
    }
    if (!standing.hasWorkspace) {
      throw new ConflictException(ERRORS.noWorkspace);
    }

    const secret = this.settings.apiKeySecret!; // the route's guard answers 501 when it is unset
    const now = this.settings.clock.now();
    const days = dto.expires_in_days ?? 0;
    const cap = this.settings.maxActiveKeysPerUserOrg;
    for (let attempt = 0; ; attempt++) {
      const generated = generateApiKey();
      const key = {
        id: randomUUID(),
        userId: principal.userId,
        orgId,
        name: dto.name ?? '',
        lookup: generated.lookup,
        last4: generated.last4,
        keyHash: hashApiKey(secret, generated.key),
        scopes,
        createdAt: now,
        expiresAt: days > 0 ? new Date(now.getTime() + days * DAY_MS) : null,
      };
      // The key, its audit event and its outbox event are one write (ApiKeyRepository.mintWithinCap):
      // all three commit together or none does.
      const audit = this.audit.prepare({
        orgId,
        action: 'api_key.minted',
        ...actorOf(principal),
        target: { type: 'api_key', id: key.id },
        details: { name: key.name, lookup: key.lookup, scopes, expires_at: key.expiresAt?.toISOString() ?? null },
      });
      const event = this.outbox ? { orgId, type: 'api_key.created' as const, data: keyEventData({ ...key, revokedAt: null }), at: now } : null;
      try {
        const saved = await this.keys.mintWithinCap({ key, audit, event }, cap);
        if (!saved) throw new ConflictException(ERRORS.tooManyActiveKeys(cap));
        this.outbox?.written();
        this.activity?.emit({ type: 'api_key.minted' });
        return { key: generated.key, ...toApiKeyRecord(saved) };
      } catch (error) {
        // A lookup collision (71 random bits) is all but impossible; draw again rather than fail.
        if ((error as { code?: string }).code === '23505' && attempt < 3) continue;
        throw error;
      }
    }
  }

  /**
   * Rotation with a grace period: same key (id, name, org, scopes, expiry), new secret shown once.
   * The replaced secret verifies until `grace_period_seconds` from now; a second rotation drops
   * the older one at once. 404 as for revoke; 409 for a revoked or expired key.
   */
  async rotate(principal: Principal, keyId: string, dto: RotateApiKeyDto): Promise<MintedApiKey> {
    const secret = this.settings.apiKeySecret!; // the route's guard answers 501 when it is unset
    const grace = dto.grace_period_seconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
    const now = this.settings.clock.now();
    const graceEndsAt = grace > 0 ? new Date(now.getTime() + grace * 1000) : null;
    for (let attempt = 0; ; attempt++) {
      const generated = generateApiKey();
      try {
        const record = await this.transactions.run(async (manager) => {
          const next = { lookup: generated.lookup, last4: generated.last4, keyHash: hashApiKey(secret, generated.key) };
          const rotated = await this.keys.rotateOwned(principal.userId, keyId, next, now, graceEndsAt, manager);
          if (!rotated) {
            const standing = await this.keys.keyStanding(principal.userId, keyId, manager);
            if (!standing) throw new NotFoundException(ERRORS.keyNotFound);
            throw new ConflictException(standing.revokedAt ? ERRORS.keyRevokedCannotRotate : ERRORS.keyExpiredCannotRotate);
          }
          await this.audit.record(manager, {
            orgId: rotated.orgId,
            action: 'api_key.rotated',
            ...actorOf(principal),
            target: { type: 'api_key', id: rotated.id },
            details: {
              name: rotated.name,
              lookup: rotated.lookup,
              previous_lookup: rotated.previousLookup,
              grace_period_seconds: grace,
              previous_secret_expires_at: graceEndsAt?.toISOString() ?? null,
            },
          });
          await this.outbox?.write(manager, {
            orgId: rotated.orgId,
            type: 'api_key.rotated',
            data: { ...keyEventData(rotated), previous_lookup: rotated.previousLookup, previous_secret_expires_at: graceEndsAt?.toISOString() ?? null },
            at: now,
          });
          return toApiKeyRecord(rotated, now);
        });
        this.outbox?.written();
        // The grace period a rotation ends (a second rotation) ends on every instance first.
        await this.invalidation.awaitAcknowledged();
        this.activity?.emit({ type: 'api_key.rotated' });
        return { key: generated.key, ...record };
      } catch (error) {
        if ((error as { code?: string }).code === '23505' && attempt < 3) continue;
        throw error;
      }
    }
  }

  /** `GET /orgs/{org_id}/api-keys`: every key bound to the org, for its owners and admins. */
  async listInOrg(principal: Principal, orgId: string, query: ListOrgApiKeysQuery): Promise<{ keys: OrgApiKeyRecord[]; next_cursor?: string }> {
    await requireOrgAdmin(this.directory, principal, orgId);
    const now = this.settings.clock.now();
    const limit = query.limit ?? MAX_PAGE_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const rows = await this.keys.listInOrg({ orgId, state: query.state, userId: query.user_id?.toLowerCase(), now }, after, limit);
    const { items, nextCursor } = pageOf(rows, limit);
    const body: { keys: OrgApiKeyRecord[]; next_cursor?: string } = {
      keys: items.map((k) => {
        const record: OrgApiKeyRecord = {
          ...toApiKeyRecord(k, now),
          user_id: k.userId,
          owner_status: k.ownerIsMember ? 'member' : 'removed',
          state: k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt.getTime() <= now.getTime() ? 'expired' : 'active',
        };
        if (k.ownerEmail) record.owner_email = k.ownerEmail;
        return record;
      }),
    };
    if (nextCursor) body.next_cursor = nextCursor;
    return body;
  }

  /**
   * `DELETE /orgs/{org_id}/api-keys/{keyID}`: an owner or admin revokes any key bound to the org.
   * A key of another org is a 404, like a missing one. The event names the admin as actor.
   */
  async revokeInOrg(principal: Principal, orgId: string, keyId: string): Promise<void> {
    await requireOrgAdmin(this.directory, principal, orgId);
    // One statement: the key, its audit event ({name, owner_id}) and its event, only if revoked now.
    const template = this.audit.prepareTemplate({ action: 'api_key.revoked_by_admin', ...actorOf(principal), target: { type: 'api_key' }, details: {} });
    const revoked = await this.keys.revokeInOrg(orgId, keyId, this.settings.clock.now(), {
      audit: template ? { template, withOwner: true } : null,
      event: this.outbox ? { revokedBy: principal.userId } : null,
    });
    if (!revoked) throw new NotFoundException(ERRORS.keyNotFound);
    this.outbox?.written();
    await this.invalidation.awaitAcknowledged();
    this.activity?.emit({ type: 'api_key.revoked' });
  }

  /** One page of the caller's keys, newest first; `next_cursor` only when more exist. */
  async list(principal: Principal, filter: KeyListQuery | string | null = null): Promise<{ keys: ApiKeyRecord[]; next_cursor?: string }> {
    // A bare org id (or null) is the pre-pagination signature hosts may still call.
    const query: KeyListQuery = typeof filter === 'object' && filter !== null ? filter : { orgId: filter };
    const org = query.orgId ? query.orgId.toLowerCase() : null;
    const after = query.cursor !== undefined ? decodeCursor(query.cursor) : null;
    // decisions.md: a filter naming an org that is missing or not the caller's is a 404, as for mint.
    if (org && (await this.directory.userOrgs(principal.userId, org, 1)).length === 0) {
      throw new NotFoundException(ERRORS.orgNotFound);
    }
    const now = this.settings.clock.now();
    const limit = Math.min(query.limit ?? MAX_PAGE_LIMIT, MAX_PAGE_LIMIT);
    const rows = await this.keys.listOwned(principal.userId, {
      orgId: org,
      state: query.state ?? null,
      after,
      take: limit + 1,
      now,
    });
    const page = pageOf(rows, limit);
    const body: { keys: ApiKeyRecord[]; next_cursor?: string } = { keys: page.items.map((k) => toApiKeyRecord(k, now)) };
    if (page.nextCursor) body.next_cursor = page.nextCursor;
    return body;
  }

  async revoke(principal: Principal, keyId: string): Promise<void> {
    // One statement: the key, its audit event ({name}) and its event, only if revoked now.
    const template = this.audit.prepareTemplate({ action: 'api_key.revoked', ...actorOf(principal), target: { type: 'api_key' }, details: {} });
    const revoked = await this.keys.revokeOwned(principal.userId, keyId, this.settings.clock.now(), {
      audit: template ? { template, withOwner: false } : null,
      event: this.outbox ? { revokedBy: principal.userId } : null,
    });
    if (!revoked) throw new NotFoundException(ERRORS.keyNotFound);
    this.outbox?.written();
    // The 204 means "refused everywhere": every instance answering from its cache has applied it.
    await this.invalidation.awaitAcknowledged();
    this.activity?.emit({ type: 'api_key.revoked' });
  }

  /**
   * Revokes keys reported as leaked, whoever owns them, by the same statement as DELETE
   * /api-keys/{id}. Each key that was active until now is audited (actor: the system, with the
   * source) and emits `api_key.revoked` and `api_key.leaked`, in its revoke's transaction.
   * Returns the ids of the keys found.
   */
  async revokeLeaked(keyIds: string[], source: string): Promise<string[]> {
    const found: string[] = [];
    for (const keyId of keyIds) {
      const key = await this.transactions.run(async (manager) => {
        const at = this.settings.clock.now();
        const k = await this.keys.revokeAny(keyId, at, manager);
        if (k && !k.alreadyRevoked) {
          await this.audit.record(manager, {
            orgId: k.orgId,
            action: 'api_key.revoked_as_leaked',
            actor: { type: 'system', id: null, source },
            target: { type: 'api_key', id: k.id },
            details: { name: k.name, lookup: k.lookup, source },
          });
          const data = { ...keyEventData(k), source };
          await this.outbox?.write(manager, { orgId: k.orgId, type: 'api_key.revoked', data, at });
          await this.outbox?.write(manager, { orgId: k.orgId, type: 'api_key.leaked', data, at });
          this.activity?.emit({ type: 'api_key.revoked' });
        }
        return k;
      });
      if (key) found.push(key.id);
    }
    this.outbox?.written();
    // Leaked keys stop everywhere before the answer: every instance's cache has applied the revokes.
    if (found.length > 0) await this.invalidation.awaitAcknowledged();
    return found;
  }
}
