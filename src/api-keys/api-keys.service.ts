import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf, type KeysetPosition } from '../common/pagination.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { actorOf, type AuditActor } from '../audit/audit.service.js';
import { keyEventData } from '../events/event-types.js';
import { ApiKeyRepository } from './api-key.repository.js';
import { toApiKeyRecord, type ApiKeyRecord, type MintedApiKey, type OrgApiKeyRecord } from './api-key.record.js';
import type { ListOrgApiKeysQuery } from './dto/list-org-api-keys.query.js';
import type { RotateApiKeyDto } from './dto/rotate-api-key.dto.js';
import type { MintApiKeyDto } from './dto/mint-api-key.dto.js';
import { KeyChanges } from './key-changes.js';
import { KeyMinting } from './key-minting.js';
import type { KeyState } from './key-state.js';
import { ERRORS } from '../common/error-messages.js';

export interface KeyListQuery {
  orgId: string | null;
  state?: KeyState | null;
  limit?: number;
  cursor?: string;
}

/**
 * The key feature: who may do what to which key, and what each change records. Every change
 * goes through KeyChanges (the unit of work: the change, its audit event and its outbox event
 * commit together, then one tail), mints and rotations by way of KeyMinting, which service keys
 * share; reads go to ApiKeyRepository.
 */
@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly changes: KeyChanges,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly minting: KeyMinting,
  ) {}

  async mint(principal: Principal, dto: MintApiKeyDto): Promise<MintedApiKey> {
    // An unregistered scope is a 400 before anything is looked up, as a malformed field is.
    this.settings.scopes.requireRegistered('scopes', dto.scopes);
    const orgId = dto.org_id.toLowerCase();
    const standing = await this.directory.mintStanding(principal.userId, orgId);
    if (!standing) throw new NotFoundException(ERRORS.orgNotFound);
    const scopes = this.settings.scopes.grantable(dto.scopes, standing.role);
    if (!standing.hasWorkspace) {
      throw new ConflictException(ERRORS.noWorkspace);
    }
    const verdict = await this.minting.judge({
      orgId,
      role: standing.role,
      scopes,
      expiresInDays: dto.expires_in_days,
      approvable: true,
    });
    const cap = this.settings.maxActiveKeysPerUserOrg;
    const minted = await this.minting.mint(verdict, {
      holder: principal.userId,
      name: dto.name,
      settings: dto,
      setBy: 'owner',
      actor: actorOf(principal),
      cap: { limit: cap, refusal: ERRORS.tooManyActiveKeys(cap) },
      audit: { action: 'api_key.minted' },
      event: { type: 'api_key.created', data: keyEventData },
    });
    return { key: minted.secret, ...toApiKeyRecord(minted.key, minted.key.createdAt) };
  }

  /**
   * Rotation with a grace period (KeyMinting.rotate): same key, new secret shown once. 404 as for
   * revoke; 409 for a revoked or expired key.
   */
  async rotate(principal: Principal, keyId: string, dto: RotateApiKeyDto): Promise<MintedApiKey> {
    const rotated = await this.minting.rotate({
      holder: principal.userId,
      keyId,
      gracePeriodSeconds: dto.grace_period_seconds,
      actor: actorOf(principal),
      notFound: ERRORS.keyNotFound,
      audit: { action: 'api_key.rotated' },
      event: { type: 'api_key.rotated', data: keyEventData },
    });
    return { key: rotated.secret, ...toApiKeyRecord(rotated.key, rotated.now) };
  }

  /** `GET /orgs/{org_id}/api-keys`: every key bound to the org, for its owners and admins. */
  async listInOrg(
    principal: Principal,
    orgId: string,
    query: ListOrgApiKeysQuery,
  ): Promise<{ keys: OrgApiKeyRecord[]; next_cursor?: string }> {
    await requireOrgAdmin(this.directory, principal, orgId);
    const now = this.settings.clock.now();
    const limit = query.limit ?? MAX_PAGE_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const rows = await this.keys.listInOrg(
      { orgId, state: query.state, userId: query.user_id?.toLowerCase(), now },
      after,
      limit,
    );
    const { items, nextCursor } = pageOf(rows, limit);
    const body: { keys: OrgApiKeyRecord[]; next_cursor?: string } = {
      keys: items.map((k) => {
        const record: OrgApiKeyRecord = {
          ...toApiKeyRecord(k, now),
          user_id: k.userId,
          owner_status: k.ownerIsMember ? 'member' : 'removed',
          state: k.state,
        };
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
      audit: {
        action: 'api_key.revoked_by_admin',
        ...actorOf(principal),
        target: { type: 'api_key' },
        details: {},
        withOwner: true,
      },
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
    const rows = await this.keys.listOwned(principal.userId, {
      orgId: org,
      state: query.state ?? null,
      after,
      take: limit + 1,
      now,
    });
    const page = pageOf(rows, limit);
    return { keys: page.items.map((k) => toApiKeyRecord(k, now)), next_cursor: page.nextCursor ?? null };
  }

  async revoke(principal: Principal, keyId: string): Promise<void> {
    const revoked = await this.changes.revoke({
      change: { scope: 'user_id', owner: principal.userId, keyId, at: this.settings.clock.now() },
      audit: {
        action: 'api_key.revoked',
        ...actorOf(principal),
        target: { type: 'api_key' },
        details: {},
        withOwner: false,
      },
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
    for (let after: KeysetPosition | null = null; ;) {
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
        audit: (k) => ({
          orgId: k.orgId,
          action: 'api_key.revoked',
          actor,
          target: { type: 'api_key', id: k.id },
          details: { name: k.name, lookup: k.lookup, source },
        }),
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
