import { ConflictException, Injectable, NotFoundException, NotImplementedException } from '@nestjs/common';
import { ApiKeyRepository } from '../api-keys/api-key.repository.js';
import type { RotateApiKeyDto } from '../api-keys/dto/rotate-api-key.dto.js';
import { KeyChanges } from '../api-keys/key-changes.js';
import { KeyMinting } from '../api-keys/key-minting.js';
import { actorOf, OPERATOR, type ChangeActor } from '../audit/audit.service.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { ERRORS } from '../common/error-messages.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf } from '../common/pagination.js';
import type { Role } from '../common/roles.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { Settings } from '../settings/settings.js';
import type { ListServiceKeysQuery } from './dto/list-service-keys.query.js';
import type { MintServiceKeyDto } from './dto/mint-service-key.dto.js';
import type { MintedServiceKeyDto } from './dto/service-key.dto.js';
import { SERVICE_ACCOUNT_ROLE, ServiceAccountRepository } from './service-account.repository.js';
import { serviceKeyEventData, toServiceKeyRecord, type ServiceKeyRecord } from './service-key.record.js';

type ServiceKeyPage = { keys: ServiceKeyRecord[]; next_cursor?: string };

/**
 * Service keys: keys the org owns, held by its service account, minted, listed, rotated and
 * revoked by any of its owners and admins. Mints and rotations are personal keys' (KeyMinting:
 * the org's key policy, the key settings, the unit of work KeyChanges): the service account is
 * the key's holder there, so the active-key cap of that (account, org) pair is the org's service-key cap.
 */
@Injectable()
export class ServiceKeysService {
  constructor(
    private readonly accounts: ServiceAccountRepository,
    private readonly keys: ApiKeyRepository,
    private readonly changes: KeyChanges,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly minting: KeyMinting,
  ) {}

  async mint(principal: Principal, orgId: string, dto: MintServiceKeyDto): Promise<MintedServiceKeyDto> {
    this.settings.scopes.requireRegistered('scopes', dto.scopes);
    const admin = await this.requireAdmin(principal, orgId);
    return this.mintFor({ actor: actorOf(principal), role: admin.role, createdBy: principal.userId }, orgId, dto);
  }

  /** One page of the org's service keys, newest first, revoked and expired included unless filtered. */
  async list(principal: Principal, orgId: string, query: ListServiceKeysQuery): Promise<ServiceKeyPage> {
    await this.requireAdmin(principal, orgId);
    return this.pageOf(orgId, query);
  }

  /** A new secret shown once, the old one verifying for the grace period, as for a personal key; 404 for no such service key, 409 revoked or expired. */
  async rotate(principal: Principal, orgId: string, keyId: string, dto: RotateApiKeyDto): Promise<MintedServiceKeyDto> {
    await this.requireAdmin(principal, orgId);
    const accountId = await this.accounts.find(orgId);
    if (!accountId) throw new NotFoundException(ERRORS.serviceKeyNotFound);
    const rotated = await this.minting.rotate({
      holder: accountId,
      keyId,
      gracePeriodSeconds: dto.grace_period_seconds,
      actor: actorOf(principal),
      notFound: ERRORS.serviceKeyNotFound,
      audit: { action: 'service_key.rotated' },
      event: {
        type: 'service_key.rotated',
        data: (k) => ({ ...serviceKeyEventData(k), rotated_by: principal.userId }),
      },
    });
    return { key: rotated.secret, ...toServiceKeyRecord(rotated.key, rotated.now) };
  }

  /** Revokes a service key of the org (already revoked: done, nothing written); 404 for a missing key, a personal key or another org's. */
  async revoke(principal: Principal, orgId: string, keyId: string): Promise<void> {
    await this.requireAdmin(principal, orgId);
    await this.revokeBy(actorOf(principal), principal.userId, orgId, keyId);
  }

  /**
   * The operator CLI (`service-key mint`): minted as the org's highest role (owner) mints it, the
   * org's key policy included; audited with the CLI as actor, without `created_by`. 404 for no such org.
   */
  async mintAsOperator(orgId: string, dto: MintServiceKeyDto): Promise<MintedServiceKeyDto> {
    await this.requireOrg(orgId);
    return this.mintFor({ actor: OPERATOR, role: SERVICE_ACCOUNT_ROLE, createdBy: null }, orgId, dto);
  }

  /** The operator CLI (`service-key list`): as `list`; 404 for no such org. */
  async listAsOperator(orgId: string, query: ListServiceKeysQuery): Promise<ServiceKeyPage> {
    await this.requireOrg(orgId);
    return this.pageOf(orgId, query);
  }

  /** The operator CLI (`service-key revoke`): as `revoke`, audited with the CLI as actor (the event's `revoked_by` is null). */
  async revokeAsOperator(orgId: string, keyId: string): Promise<void> {
    await this.requireOrg(orgId);
    await this.revokeBy(OPERATOR, null, orgId, keyId);
  }

  /**
   * The mint itself, for an owner or admin (or the operator CLI, as the org's highest role): the
   * scopes capped by `role`, the org's key policy judged as for that role's personal key (never
   * held for approval: owners and admins approve), then the service account (created on the org's
   * first key, and only for a mint the policy allows) holds it.
   */
  private async mintFor(
    by: { actor: ChangeActor; role: Role; createdBy: string | null },
    orgId: string,
    dto: MintServiceKeyDto,
  ): Promise<MintedServiceKeyDto> {
    const scopes = this.settings.scopes.grantable(dto.scopes, by.role);
    const verdict = await this.minting.judge({
      orgId,
      role: by.role,
      scopes,
      expiresInDays: dto.expires_in_days,
      approvable: false,
    });
    const accountId = await this.accounts.ensure(orgId);
    if (!accountId) throw new ConflictException(ERRORS.serviceAccountAddressTaken);
    const cap = this.settings.maxActiveServiceKeysPerOrg;
    const minted = await this.minting.mint(verdict, {
      holder: accountId,
      name: dto.name,
      settings: dto,
      // Only an org's owners and admins (or the operator) mint and manage its service keys.
      setBy: 'admin',
      createdBy: by.createdBy,
      actor: by.actor,
      cap: { limit: cap, refusal: ERRORS.tooManyServiceKeys(cap) },
      audit: { action: 'service_key.minted', details: { service_account_id: accountId } },
      event: { type: 'service_key.created', data: serviceKeyEventData },
    });
    return { key: minted.secret, ...toServiceKeyRecord(minted.key, minted.key.createdAt) };
  }

  private async pageOf(orgId: string, query: ListServiceKeysQuery): Promise<ServiceKeyPage> {
    // A cursor this service did not return is a 400 whether or not the org holds service keys yet.
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const accountId = await this.accounts.find(orgId);
    if (!accountId) return { keys: [] };
    const now = this.settings.clock.now();
    const limit = query.limit ?? MAX_PAGE_LIMIT;
    const rows = await this.keys.listInOrg({ orgId, userId: accountId, state: query.state, now }, after, limit);
    const { items, nextCursor } = pageOf(rows, limit);
    const body: ServiceKeyPage = { keys: items.map((k) => toServiceKeyRecord(k, now)) };
    if (nextCursor) body.next_cursor = nextCursor;
    return body;
  }

  private async revokeBy(actor: ChangeActor, revokedBy: string | null, orgId: string, keyId: string): Promise<void> {
    const accountId = await this.accounts.find(orgId);
    const revoked = accountId
      ? await this.changes.revoke({
          change: { scope: 'user_id', owner: accountId, keyId, at: this.settings.clock.now() },
          audit: {
            action: 'service_key.revoked',
            ...actor,
            target: { type: 'api_key' },
            details: {},
            withOwner: false,
          },
          event: { revokedBy, type: 'service_key.revoked' },
        })
      : null;
    if (!revoked) throw new NotFoundException(ERRORS.serviceKeyNotFound);
  }

  /** Owners and admins only (members and viewers 403, not a member 404); service accounts live in the built-in directory only (501). */
  private async requireAdmin(principal: Principal, orgId: string) {
    if (!this.directory.ownTables) throw new NotImplementedException(ERRORS.serviceKeysNeedOwnDirectory);
    return requireOrgAdmin(this.directory, principal, orgId);
  }

  /** The operator's way in: any org that exists (404 otherwise), in the built-in directory (501 otherwise). */
  private async requireOrg(orgId: string): Promise<void> {
    if (!this.directory.ownTables) throw new NotImplementedException(ERRORS.serviceKeysNeedOwnDirectory);
    if ((await this.directory.orgPlan(orgId)) === null) throw new NotFoundException(ERRORS.orgNotFound);
  }
}
