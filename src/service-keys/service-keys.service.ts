import { randomUUID } from 'node:crypto';
import { ConflictException, ForbiddenException, Injectable, NotFoundException, NotImplementedException } from '@nestjs/common';
import { ApiKeyRepository } from '../api-keys/api-key.repository.js';
import { DEFAULT_GRACE_PERIOD_SECONDS, type RotateApiKeyDto } from '../api-keys/dto/rotate-api-key.dto.js';
import { KeyChanges } from '../api-keys/key-changes.js';
import { actorOf } from '../audit/audit.service.js';
import { generateApiKey, hashApiKey } from '../auth/api-key-format.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { ERRORS } from '../common/error-messages.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf } from '../common/pagination.js';
import { roleCeiling, SCOPES, type Scope } from '../common/roles.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { Settings } from '../settings/settings.js';
import type { ListServiceKeysQuery } from './dto/list-service-keys.query.js';
import type { MintServiceKeyDto } from './dto/mint-service-key.dto.js';
import type { MintedServiceKeyDto } from './dto/service-key.dto.js';
import { ServiceAccountRepository } from './service-account.repository.js';
import { serviceKeyEventData, toServiceKeyRecord, type ServiceKeyRecord } from './service-key.record.js';

const DAY_MS = 86_400_000;

/**
 * Service keys: keys the org owns, held by its service account, minted, listed, rotated and
 * revoked by any of its owners and admins. Every change goes through KeyChanges, the unit of work
 * of personal keys: the service account is the key's owner there, so the active-key cap of that
 * (account, org) pair is the org's service-key cap.
 */
@Injectable()
export class ServiceKeysService {
  constructor(
    private readonly accounts: ServiceAccountRepository,
    private readonly keys: ApiKeyRepository,
    private readonly changes: KeyChanges,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  async mint(principal: Principal, orgId: string, dto: MintServiceKeyDto): Promise<MintedServiceKeyDto> {
    const admin = await this.requireAdmin(principal, orgId);
    // As for a personal key: omitted or [] is read-only, duplicates collapse, canonical order; capped by the minting admin's role.
    const asked: Scope[] = dto.scopes && dto.scopes.length > 0 ? dto.scopes : ['decisions:read'];
    const scopes = SCOPES.filter((s) => asked.includes(s));
    const ceiling = roleCeiling(admin.role);
    const above = scopes.filter((s) => !ceiling.includes(s));
    if (above.length > 0) throw new ForbiddenException(ERRORS.roleCannotGrant(admin.role, above, ceiling));

    const accountId = await this.accounts.ensure(orgId);
    if (!accountId) throw new ConflictException(ERRORS.serviceAccountAddressTaken);
    const hmacKey = this.settings.apiKeySecret!; // the route's guard answers 501 when it is unset
    const now = this.settings.clock.now();
    const days = dto.expires_in_days ?? 0;
    const cap = this.settings.maxActiveServiceKeysPerOrg;
    const minted = await this.changes.mint(() => {
      const generated = generateApiKey();
      const key = {
        id: randomUUID(),
        userId: accountId,
        orgId,
        name: dto.name ?? '',
        lookup: generated.lookup,
        last4: generated.last4,
        keyHash: hashApiKey(hmacKey, generated.key),
        scopes,
        createdAt: now,
        expiresAt: days > 0 ? new Date(now.getTime() + days * DAY_MS) : null,
        createdBy: principal.userId,
      };
      return {
        secret: generated.key,
        change: { key, cap },
        audit: {
          orgId,
          action: 'service_key.minted',
          ...actorOf(principal),
          target: { type: 'api_key', id: key.id },
          details: { name: key.name, lookup: key.lookup, scopes, expires_at: key.expiresAt?.toISOString() ?? null, service_account_id: accountId },
        },
        event: { orgId, type: 'service_key.created', data: serviceKeyEventData({
            ...key, approval: null, lastUsedAt: null, revokedAt: null, previousLookup: null, previousKeyHash: null, previousExpiresAt: null,
            enabled: true, rateLimits: null, creditsRemaining: null, creditsRefill: null, creditsPeriod: null, creditsEpoch: 0, allowedCidrs: null, metadata: null,
          }), at: now },
      };
    });
    if (!minted) throw new ConflictException(ERRORS.tooManyServiceKeys(cap));
    return { key: minted.secret, ...toServiceKeyRecord(minted.key, now) };
  }

  /** One page of the org's service keys, newest first, revoked and expired included unless filtered. */
  async list(principal: Principal, orgId: string, query: ListServiceKeysQuery): Promise<{ keys: ServiceKeyRecord[]; next_cursor?: string }> {
    await this.requireAdmin(principal, orgId);
    const accountId = await this.accounts.find(orgId);
    if (!accountId) return { keys: [] };
    const now = this.settings.clock.now();
    const limit = query.limit ?? MAX_PAGE_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const rows = await this.keys.listInOrg({ orgId, userId: accountId, state: query.state, now }, after, limit);
    const { items, nextCursor } = pageOf(rows, limit);
    const body: { keys: ServiceKeyRecord[]; next_cursor?: string } = { keys: items.map((k) => toServiceKeyRecord(k, now)) };
    if (nextCursor) body.next_cursor = nextCursor;
    return body;
  }

  /** A new secret shown once, the old one verifying for the grace period, as for a personal key; 404 for no such service key, 409 revoked or expired. */
  async rotate(principal: Principal, orgId: string, keyId: string, dto: RotateApiKeyDto): Promise<MintedServiceKeyDto> {
    await this.requireAdmin(principal, orgId);
    const accountId = await this.accounts.find(orgId);
    if (!accountId) throw new NotFoundException(ERRORS.serviceKeyNotFound);
    const hmacKey = this.settings.apiKeySecret!;
    const grace = dto.grace_period_seconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
    const now = this.settings.clock.now();
    const graceEndsAt = grace > 0 ? new Date(now.getTime() + grace * 1000) : null;
    const previousExpiresAt = graceEndsAt?.toISOString() ?? null;
    const rotated = await this.changes.rotate(() => {
      const generated = generateApiKey();
      return {
        secret: generated.key,
        change: { userId: accountId, keyId, secret: { lookup: generated.lookup, last4: generated.last4, keyHash: hashApiKey(hmacKey, generated.key) }, now, graceEndsAt },
        audit: (k) => ({
          orgId: k.orgId,
          action: 'service_key.rotated',
          ...actorOf(principal),
          target: { type: 'api_key', id: k.id },
          details: { name: k.name, lookup: k.lookup, previous_lookup: k.previousLookup, grace_period_seconds: grace, previous_secret_expires_at: previousExpiresAt },
        }),
        event: (k) => ({
          orgId: k.orgId,
          type: 'service_key.rotated',
          data: { ...serviceKeyEventData(k), rotated_by: principal.userId, previous_lookup: k.previousLookup, previous_secret_expires_at: previousExpiresAt },
          at: now,
        }),
      };
    });
    if (!rotated) {
      const standing = await this.keys.keyStanding(accountId, keyId);
      if (!standing) throw new NotFoundException(ERRORS.serviceKeyNotFound);
      throw new ConflictException(standing.revokedAt ? ERRORS.keyRevokedCannotRotate : ERRORS.keyExpiredCannotRotate);
    }
    return { key: rotated.secret, ...toServiceKeyRecord(rotated.key, now) };
  }

  /** Revokes a service key of the org (already revoked: done, nothing written); 404 for a missing key, a personal key or another org's. */
  async revoke(principal: Principal, orgId: string, keyId: string): Promise<void> {
    await this.requireAdmin(principal, orgId);
    const accountId = await this.accounts.find(orgId);
    const revoked = accountId
      ? await this.changes.revoke({
          change: { scope: 'user_id', owner: accountId, keyId, at: this.settings.clock.now() },
          audit: { action: 'service_key.revoked', ...actorOf(principal), target: { type: 'api_key' }, details: {}, withOwner: false },
          event: { revokedBy: principal.userId, type: 'service_key.revoked' },
        })
      : null;
    if (!revoked) throw new NotFoundException(ERRORS.serviceKeyNotFound);
  }

  /** Owners and admins only (members and viewers 403, not a member 404); service accounts live in the built-in directory only (501). */
  private async requireAdmin(principal: Principal, orgId: string) {
    if (!this.directory.ownTables) throw new NotImplementedException(ERRORS.serviceKeysNeedOwnDirectory);
    return requireOrgAdmin(this.directory, principal, orgId);
  }
}
