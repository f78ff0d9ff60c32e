import { Injectable, NotFoundException } from '@nestjs/common';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { ERRORS } from '../common/error-messages.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { Settings } from '../settings/settings.js';
import { ApiKeyRepository } from './api-key.repository.js';
import {
  DEFAULT_SCOPE_USAGE_DAYS,
  MAX_SCOPE_USAGE_DAYS,
  type ScopeUsageDto,
  type ScopeUseDto,
} from './dto/scope-usage.dto.js';

const DAY_MS = 86_400_000;

/**
 * Which of its scopes a key really used (counted by auth's ScopeUsageRecorder on every request
 * that passed a route's `@RequireScopes`), so its owner can narrow it to what it uses.
 */
@Injectable()
export class ScopeUsageService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  /** GET /api-keys/{keyID}/scope-usage: the caller's own key; anyone else's is a 404, as a missing one. */
  async ownKey(principal: Principal, keyId: string, days?: number): Promise<ScopeUsageDto> {
    const key = await this.keys.scopeHolding(keyId);
    if (!key || key.userId !== principal.userId) throw new NotFoundException(ERRORS.keyNotFound);
    return this.report(keyId, key.scopes, days);
  }

  /** GET /orgs/{org_id}/api-keys/{keyID}/scope-usage: owners and admins, any key of the org (another org's: 404). */
  async orgKey(principal: Principal, orgId: string, keyId: string, days?: number): Promise<ScopeUsageDto> {
    await requireOrgAdmin(this.directory, principal, orgId);
    const key = await this.keys.scopeHolding(keyId);
    if (!key || key.orgId !== orgId) throw new NotFoundException(ERRORS.keyNotFound);
    return this.report(keyId, key.scopes, days);
  }

  /** Rows older than any request may ask for (the periodic job `scope-usage-retention`). */
  prune(): Promise<number> {
    const today = this.settings.clock.now().getTime();
    const oldest = new Date(today - (today % DAY_MS) - (MAX_SCOPE_USAGE_DAYS - 1) * DAY_MS);
    return this.keys.pruneScopeUse(oldest.toISOString().slice(0, 10));
  }

  private async report(keyId: string, stored: string[], days = DEFAULT_SCOPE_USAGE_DAYS): Promise<ScopeUsageDto> {
    const now = this.settings.clock.now().getTime();
    const since = new Date(now - (now % DAY_MS) - (days - 1) * DAY_MS).toISOString().slice(0, 10);
    const used = new Map((await this.keys.scopeUse(keyId, since)).map((r) => [r.scope, r]));
    // What the key holds and the registry still knows: an unregistered scope counts for nothing.
    const held = this.settings.scopes.canonical(stored);
    const scopes = held.map((scope): ScopeUseDto => {
      const use = used.get(scope);
      return use
        ? { scope, requests: use.requests, last_used_at: use.lastUsedAt.toISOString() }
        : { scope, requests: 0 };
    });
    return { days, scopes, unused: scopes.filter((s) => s.requests === 0).map((s) => s.scope) };
  }
}
