import { ConflictException, ForbiddenException, Injectable, NotFoundException, Optional } from '@nestjs/common';
import { generateApiKey, hashApiKey } from '../auth/api-key-format.js';
import type { Principal } from '../auth/principal.js';
import { ORG_NOT_FOUND } from '../auth/session-org.resolver.js';
import { roleCeiling, SCOPES, type Scope } from '../common/roles.js';
import { ActivityEvents } from '../core/activity-events.js';
import { Settings } from '../core/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { actorOf, AuditService } from '../audit/audit.service.js';
import { Transactions } from '../database/transactions.js';
import { ApiKeyRepository } from './api-key.repository.js';
import { toApiKeyRecord, type ApiKeyRecord, type MintedApiKey } from './api-key.record.js';
import type { MintApiKeyDto } from './dto/mint-api-key.dto.js';

const DAY_MS = 86_400_000;
export const KEY_NOT_FOUND = 'API key not found';

@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    @Optional() private readonly activity?: ActivityEvents,
  ) {}

  async mint(principal: Principal, dto: MintApiKeyDto): Promise<MintedApiKey> {
    const orgId = dto.org_id.toLowerCase();
    const standing = await this.directory.mintStanding(principal.userId, orgId);
    if (!standing) throw new NotFoundException(ORG_NOT_FOUND);

    // Omitted or [] means read-only; duplicates collapse; stored in canonical order.
    const asked: Scope[] = dto.scopes && dto.scopes.length > 0 ? dto.scopes : ['decisions:read'];
    const scopes = SCOPES.filter((s) => asked.includes(s));
    const ceiling = roleCeiling(standing.role);
    const above = scopes.filter((s) => !ceiling.includes(s));
    if (above.length > 0) {
      throw new ForbiddenException(
        `Your role "${standing.role}" in this organisation cannot grant ${above.join(', ')}; it allows at most: ${ceiling.join(', ')}`,
      );
    }
    if (!standing.hasWorkspace) {
      throw new ConflictException('You have no workspace in this organisation yet: connect a repository first');
    }

    const secret = this.settings.apiKeySecret!; // the route's guard answers 501 when it is unset
    const now = this.settings.clock.now();
    const days = dto.expires_in_days ?? 0;
    for (let attempt = 0; ; attempt++) {
      const generated = generateApiKey();
      try {
        const record = await this.transactions.run(async (manager) => {
          const saved = await this.keys.insert({
            userId: principal.userId,
            orgId,
            name: dto.name ?? '',
            lookup: generated.lookup,
            last4: generated.last4,
            keyHash: hashApiKey(secret, generated.key),
            scopes,
            createdAt: now,
            expiresAt: days > 0 ? new Date(now.getTime() + days * DAY_MS) : null,
          }, manager);
          await this.audit.record(manager, {
            orgId,
            action: 'api_key.minted',
            ...actorOf(principal),
            target: { type: 'api_key', id: saved.id },
            details: { name: saved.name, lookup: saved.lookup, scopes, expires_at: saved.expiresAt?.toISOString() ?? null },
          });
          return toApiKeyRecord(saved);
        });
        this.activity?.emit({ type: 'api_key.minted' });
        return { key: generated.key, ...record };
      } catch (error) {
        // A lookup collision (71 random bits) is all but impossible; draw again rather than fail.
        if ((error as { code?: string }).code === '23505' && attempt < 3) continue;
        throw error;
      }
    }
  }

  async list(principal: Principal, orgId: string | null): Promise<{ keys: ApiKeyRecord[] }> {
    const org = orgId ? orgId.toLowerCase() : null;
    // decisions.md: a filter naming an org that is missing or not the caller's is a 404, as for mint.
    if (org && (await this.directory.userOrgs(principal.userId, org, 1)).length === 0) {
      throw new NotFoundException(ORG_NOT_FOUND);
    }
    const keys = await this.keys.listOwned(principal.userId, org);
    return { keys: keys.map(toApiKeyRecord) };
  }

  async revoke(principal: Principal, keyId: string): Promise<void> {
    const revoked = await this.transactions.run(async (manager) => {
      const key = await this.keys.revokeOwned(principal.userId, keyId, this.settings.clock.now(), manager);
      if (key && !key.alreadyRevoked) {
        await this.audit.record(manager, {
          orgId: key.orgId,
          action: 'api_key.revoked',
          ...actorOf(principal),
          target: { type: 'api_key', id: key.id },
          details: { name: key.name },
        });
      }
      return key;
    });
    if (!revoked) throw new NotFoundException(KEY_NOT_FOUND);
    this.activity?.emit({ type: 'api_key.revoked' });
  }
}
