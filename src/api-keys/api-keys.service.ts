import { randomUUID } from 'node:crypto';
import { ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { generateApiKey, hashApiKey } from '../auth/api-key-format.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf, type KeysetPosition } from '../common/pagination.js';
import { roleCeiling, SCOPES, type Scope } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { actorOf, type AuditActor } from '../audit/audit.service.js';
import { keyEventData } from '../events/event-types.js';
import { ApiKeyRepository } from './api-key.repository.js';
import { toApiKeyRecord, type ApiKeyRecord, type MintedApiKey, type OrgApiKeyRecord } from './api-key.record.js';
import type { ListOrgApiKeysQuery } from './dto/list-org-api-keys.query.js';
import { DEFAULT_GRACE_PERIOD_SECONDS, type RotateApiKeyDto } from './dto/rotate-api-key.dto.js';
import type { MintApiKeyDto } from './dto/mint-api-key.dto.js';
import { KeyChanges } from './key-changes.js';
import { KeyPolicyPort } from './key-policy.port.js';
import { mintSettingsOf } from './key-settings.service.js';
import type { KeyState } from './key-state.js';
import { ERRORS } from '../common/error-messages.js';

const DAY_MS = 86_400_000;

export interface KeyListQuery {
  orgId: string | null;
  state?: KeyState | null;
  limit?: number;
  cursor?: string;
}

/**
 * The key feature: who may do what to which key, and what each change records. Every change
 * goes through KeyChanges (the unit of work: the change, its audit event and its outbox event
 * commit together, then one tail); reads go to ApiKeyRepository.
 */
@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly changes: KeyChanges,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly policy: KeyPolicyPort,
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
    // The org's key policy (key-policies/): lifetime, required expiry, scopes by role, approval.
    const { pending } = await this.policy.judgeMint({ orgId, role: standing.role, scopes, expiresInDays: dto.expires_in_days ?? 0 });

    const hmacKey = this.settings.apiKeySecret!; // the route's guard answers 501 when it is unset
    const now = this.settings.clock.now();
    const days = dto.expires_in_days ?? 0;
    const cap = this.settings.maxActiveKeysPerUserOrg;
    const minted = await this.changes.mint(() => {
      const generated = generateApiKey();
      const key = {
        id: randomUUID(),
        userId: principal.userId,
        orgId,
        name: dto.name ?? '',
        lookup: generated.lookup,
        last4: generated.last4,
        keyHash: hashApiKey(hmacKey, generated.key),
        scopes,
        createdAt: now,
        expiresAt: days > 0 ? new Date(now.getTime() + days * DAY_MS) : null,
        approval: pending ? ('pending' as const) : null,
        settings: mintSettingsOf(dto, now),
      };
      return {
        secret: generated.key,
        change: { key, cap },
        audit: {
          orgId,
          action: 'api_key.minted',
          ...actorOf(principal),
          target: { type: 'api_key', id: key.id },
          details: { name: key.name, lookup: key.lookup, scopes, expires_at: key.expiresAt?.toISOString() ?? null, ...(pending ? { status: 'pending' } : {}) },
        },
        // A key awaiting approval is announced as pending; `api_key.approved` follows the approval.
        event: { orgId, type: pending ? 'api_key.pending' : 'api_key.created', data: keyEventData({ ...key, revokedAt: null }), at: now },
      };
    });
    if (!minted) throw new ConflictException(ERRORS.tooManyActiveKeys(cap));
    return { key: minted.secret, ...toApiKeyRecord(minted.key) };
  }

  /**
   * Rotation with a grace period: same key (id, name, org, scopes, expiry), new secret shown once.
   * The replaced secret verifies until `grace_period_seconds` from now; a second rotation drops
   * the older one at once. 404 as for revoke; 409 for a revoked or expired key.
   */
  async rotate(principal: Principal, keyId: string, dto: RotateApiKeyDto): Promise<MintedApiKey> {
    const hmacKey = this.settings.apiKeySecret!; // the route's guard answers 501 when it is unset
    const grace = dto.grace_period_seconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
    const now = this.settings.clock.now();
    const graceEndsAt = grace > 0 ? new Date(now.getTime() + grace * 1000) : null;
    const previousExpiresAt = graceEndsAt?.toISOString() ?? null;
    // The rotated key keeps its expiry: a policy that requires one refuses a key without (400).
    const before = await this.keys.keyStanding(principal.userId, keyId);
    if (before && !before.revokedAt) await this.policy.judgeRotation(before.orgId, before.expiresAt);
    const rotated = await this.changes.rotate(() => {
      const generated = generateApiKey();
      return {
        secret: generated.key,
        change: { userId: principal.userId, keyId, secret: { lookup: generated.lookup, last4: generated.last4, keyHash: hashApiKey(hmacKey, generated.key) }, now, graceEndsAt },
        audit: (k) => ({
          orgId: k.orgId,
          action: 'api_key.rotated',
          ...actorOf(principal),
          target: { type: 'api_key', id: k.id },
          details: { name: k.name, lookup: k.lookup, previous_lookup: k.previousLookup, grace_period_seconds: grace, previous_secret_expires_at: previousExpiresAt },
        }),
        event: (k) => ({
          orgId: k.orgId,
          type: 'api_key.rotated',
          data: { ...keyEventData(k), previous_lookup: k.previousLookup, previous_secret_expires_at: previousExpiresAt },
          at: now,
        }),
      };
    });
    if (!rotated) {
      const standing = await this.keys.keyStanding(principal.userId, keyId);
      if (!standing) throw new NotFoundException(ERRORS.keyNotFound);
      throw new ConflictException(standing.revokedAt ? ERRORS.keyRevokedCannotRotate : ERRORS.keyExpiredCannotRotate);
    }
    return { key: rotated.secret, ...toApiKeyRecord(rotated.key, now) };
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
        const record: OrgApiKeyRecord = { ...toApiKeyRecord(k, now), user_id: k.userId, owner_status: k.ownerIsMember ? 'member' : 'removed', state: k.state };
        if (k.ownerEmail) record.owner_email = k.ownerEmail;
        if (k.ownerKind === 'service') record.owner = { type: 'org' };
        if (k.createdBy) record.created_by = k.createdBy;
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
    const revoked = await this.changes.revoke({
      change: { scope: 'org_id', owner: orgId, keyId, at: this.settings.clock.now() },
      audit: { action: 'api_key.revoked_by_admin', ...actorOf(principal), target: { type: 'api_key' }, details: {}, withOwner: true },
      event: { revokedBy: principal.userId },
    });
    if (!revoked) throw new NotFoundException(ERRORS.keyNotFound);
  }

  /**
   * One page of the caller's keys, newest first, in the newest API version's shape: `next_cursor`
   * always, null on the last page (older versions are answered by src/versioning/).
   */
  async list(principal: Principal, query: KeyListQuery): Promise<{ keys: ApiKeyRecord[]; next_cursor: string | null }> {
    const org = query.orgId ? query.orgId.toLowerCase() : null;
    const after = query.cursor !== undefined ? decodeCursor(query.cursor) : null;
    // decisions.md: a filter naming an org that is missing or not the caller's is a 404, as for mint.
    if (org && (await this.directory.userOrgs(principal.userId, org, 1)).length === 0) {
      throw new NotFoundException(ERRORS.orgNotFound);
    }
    const now = this.settings.clock.now();
    const limit = Math.min(query.limit ?? MAX_PAGE_LIMIT, MAX_PAGE_LIMIT);
    const rows = await this.keys.listOwned(principal.userId, { orgId: org, state: query.state ?? null, after, take: limit + 1, now });
    const page = pageOf(rows, limit);
    return { keys: page.items.map((k) => toApiKeyRecord(k, now)), next_cursor: page.nextCursor ?? null };
  }

  async revoke(principal: Principal, keyId: string): Promise<void> {
    const revoked = await this.changes.revoke({
      change: { scope: 'user_id', owner: principal.userId, keyId, at: this.settings.clock.now() },
      audit: { action: 'api_key.revoked', ...actorOf(principal), target: { type: 'api_key' }, details: {}, withOwner: false },
      event: { revokedBy: principal.userId },
    });
    if (!revoked) throw new NotFoundException(ERRORS.keyNotFound);
  }

  /**
   * Revokes keys reported as leaked, whoever owns them. Each key that was active until now is
   * audited (actor: the system, with the source) and emits `api_key.revoked` and `api_key.leaked`,
   * in its revoke's transaction. Returns the ids of the keys found.
   */
  async revokeLeaked(keyIds: string[], source: string): Promise<string[]> {
    const at = this.settings.clock.now();
    const found = await this.changes.revokeLeaked(
      keyIds.map((keyId) => ({
        change: { keyId, at },
        audit: (k) => ({
          orgId: k.orgId,
          action: 'api_key.revoked_as_leaked',
          actor: { type: 'system', id: null, source },
          target: { type: 'api_key', id: k.id },
          details: { name: k.name, lookup: k.lookup, source },
        }),
        events: (k) => {
          const data = { ...keyEventData(k), source };
          return [
            { orgId: k.orgId, type: 'api_key.revoked', data, at },
            { orgId: k.orgId, type: 'api_key.leaked', data, at },
          ];
        },
      })),
    );
    return found.map((k) => k.id);
  }

  /**
   * A person's erasure: every key of `userId` not yet revoked (in any org) is revoked through the
   * unit of work, audited with `actor` and announced as `api_key.revoked` with `source`
   * `user_erasure`. Returns how many it revoked now (0 on a second run).
   */
  async revokeAllOfUser(userId: string, actor: AuditActor): Promise<number> {
    const at = this.settings.clock.now();
    const ids: string[] = [];
    for (let after: KeysetPosition | null = null; ; ) {
      const page = await this.keys.listOwned(userId, { orgId: null, state: null, after, take: 500, now: at });
      ids.push(...page.filter((k) => !k.revokedAt).map((k) => k.id));
      if (page.length < 500) break;
      after = page[page.length - 1];
    }
    const source = 'user_erasure';
    const found = await this.changes.revokeOwnerKeys(
      userId,
      ids.map((keyId) => ({
        change: { keyId, at },
        audit: (k) => ({ orgId: k.orgId, action: 'api_key.revoked', actor, target: { type: 'api_key', id: k.id }, details: { name: k.name, lookup: k.lookup, source } }),
        events: (k) => [{ orgId: k.orgId, type: 'api_key.revoked', data: { ...keyEventData(k), source }, at }],
      })),
    );
    return found.filter((k) => !k.alreadyRevoked).length;
  }

  /**
   * Forgets every rotated-out secret whose grace period has ended (they no longer verify nor match
   * a leak report either way); for a periodic job. Returns how many keys it cleared.
   */
  clearLapsedPreviousSecrets(now: Date = this.settings.clock.now()): Promise<number> {
    return this.keys.clearLapsedPreviousSecrets(now);
  }
}
