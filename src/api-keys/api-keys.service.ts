import { ConflictException, ForbiddenException, Injectable, NotFoundException, Optional } from '@nestjs/common';
import { generateApiKey, hashApiKey } from '../auth/api-key-format.js';
import type { Principal } from '../auth/principal.js';
import { ORG_NOT_FOUND } from '../auth/session-org.resolver.js';
import { roleCeiling, SCOPES, type Scope } from '../common/roles.js';
import { ActivityEvents } from '../core/activity-events.js';
import { Settings } from '../core/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf } from '../common/pagination.js';
import { ApiKeyRepository, type KeyState } from './api-key.repository.js';
import { toApiKeyRecord, type ApiKeyRecord, type MintedApiKey } from './api-key.record.js';
import type { MintApiKeyDto } from './dto/mint-api-key.dto.js';

const DAY_MS = 86_400_000;
const tooManyKeys = (cap: number) =>
  `You already hold ${cap} active keys in this organisation (the limit, MAX_ACTIVE_KEYS_PER_USER_ORG): revoke one before minting another`;

export interface KeyListQuery {
  orgId: string | null;
  state?: KeyState | null;
  limit?: number;
  cursor?: string;
}
export const KEY_NOT_FOUND = 'API key not found';

@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
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
        const saved = await this.keys.insertWithinCap({
          userId: principal.userId,
          orgId,
          name: dto.name ?? '',
          lookup: generated.lookup,
          last4: generated.last4,
          keyHash: hashApiKey(secret, generated.key),
          scopes,
          createdAt: now,
          expiresAt: days > 0 ? new Date(now.getTime() + days * DAY_MS) : null,
        }, this.settings.maxActiveKeysPerUserOrg);
        if (!saved) throw new ConflictException(tooManyKeys(this.settings.maxActiveKeysPerUserOrg));
        this.activity?.emit({ type: 'api_key.minted' });
        return { key: generated.key, ...toApiKeyRecord(saved) };
      } catch (error) {
        // A lookup collision (71 random bits) is all but impossible; draw again rather than fail.
        if ((error as { code?: string }).code === '23505' && attempt < 3) continue;
        throw error;
      }
    }
  }

  /** One page of the caller's keys, newest first; `next_cursor` only when more exist. */
  async list(principal: Principal, filter: KeyListQuery | string | null = null): Promise<{ keys: ApiKeyRecord[]; next_cursor?: string }> {
    // A bare org id (or null) is the pre-pagination signature hosts may still call.
    const query: KeyListQuery = typeof filter === 'object' && filter !== null ? filter : { orgId: filter };
    const org = query.orgId ? query.orgId.toLowerCase() : null;
    const after = query.cursor !== undefined ? decodeCursor(query.cursor) : null;
    // decisions.md: a filter naming an org that is missing or not the caller's is a 404, as for mint.
    if (org && (await this.directory.userOrgs(principal.userId, org, 1)).length === 0) {
      throw new NotFoundException(ORG_NOT_FOUND);
    }
    const limit = Math.min(query.limit ?? MAX_PAGE_LIMIT, MAX_PAGE_LIMIT);
    const rows = await this.keys.listOwned(principal.userId, {
      orgId: org,
      state: query.state ?? null,
      after,
      take: limit + 1,
      now: this.settings.clock.now(),
    });
    const page = pageOf(rows, limit);
    const body: { keys: ApiKeyRecord[]; next_cursor?: string } = { keys: page.items.map(toApiKeyRecord) };
    if (page.nextCursor) body.next_cursor = page.nextCursor;
    return body;
  }

  async revoke(principal: Principal, keyId: string): Promise<void> {
    const found = await this.keys.revokeOwned(principal.userId, keyId, this.settings.clock.now());
    if (!found) throw new NotFoundException(KEY_NOT_FOUND);
    this.activity?.emit({ type: 'api_key.revoked' });
  }
}
