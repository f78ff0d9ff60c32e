import { Injectable } from '@nestjs/common';
import { ApiKeyRepository, type KeyVerificationRow } from '../api-keys/api-key.repository.js';
import { effectiveScopes } from '../common/roles.js';
import { utcDay } from '../common/clock.js';
import { TurnBatcher } from '../common/turn-batcher.js';
import { attachUsageSnapshot } from '../usage/usage-snapshot.js';
import { Settings } from '../core/settings.js';
import { memberKey, OrgDirectory } from '../directory/org-directory.js';
import { TypeOrmOrgDirectory } from '../directory/typeorm-org-directory.js';
import { hashApiKey, hashesEqual, parseApiKey } from './api-key-format.js';
import { LastUsedWriter } from './last-used-writer.js';
import { AuthMetrics } from './auth-metrics.js';
import type { Principal } from './principal.js';

/**
 * Verifies API keys against the database on every request (no cache of positive answers, so a
 * revoke is seen by every instance on its next request). Verifications that arrive in the same
 * event-loop turn share one `WHERE lookup = ANY($1)` statement; a request that arrives while a
 * batch is in flight waits for the next one, so no answer predates its request.
 */
type VerifiedRow = KeyVerificationRow & { day: string };

@Injectable()
export class ApiKeyVerifier {
  private readonly rows = new TurnBatcher<string, VerifiedRow>(
    async (lookups) => {
      const day = utcDay(this.settings.clock.now());
      const found = new Map<string, VerifiedRow>();
      for (const r of await this.fetch(lookups, day)) {
        const row = { ...r, day };
        found.set(r.lookup, row);
        // A rotated key in its grace period answers to its previous lookup too.
        if (r.previousLookup) found.set(r.previousLookup, row);
      }
      return found;
    },
    (lookup) => lookup,
  );
  private readonly ownDirectory: boolean;

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly lastUsed: LastUsedWriter,
    private readonly metrics: AuthMetrics,
  ) {
    // With the built-in directory, owner and membership come in the same statement as the key.
    this.ownDirectory = directory instanceof TypeOrmOrgDirectory;
  }

  /** The principal for a key, or null for any kind of invalid key. Rejects only when the database fails. */
  async verify(token: string): Promise<Principal | null> {
    const secret = this.settings.apiKeySecret;
    const lookup = parseApiKey(token);
    if (!lookup) return this.refuse('malformed');
    if (!secret) return this.refuse('not_configured');
    const row = await this.rows.load(lookup);
    if (!row) return this.refuse('unknown');
    const hash = hashApiKey(secret, token);
    const now = this.settings.clock.now();
    if (row.lookup === lookup) {
      if (!hashesEqual(row.keyHash, hash)) return this.refuse('unknown');
    } else {
      // The secret a rotation replaced: valid until its grace period ends.
      if (!row.previousKeyHash || !hashesEqual(row.previousKeyHash, hash)) return this.refuse('unknown');
      if (!row.previousExpiresAt || row.previousExpiresAt.getTime() <= now.getTime()) return this.refuse('expired');
    }
    if (row.revokedAt) return this.refuse('revoked');
    if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) return this.refuse('expired');
    if (!row.role || !row.email || !row.plan) return this.refuse('not_member');
    this.lastUsed.touch(row.id, row.lastUsedAt, now);
    this.metrics.verification('ok');
    const principal: Principal = {
      kind: 'api_key',
      keyId: row.id,
      userId: row.userId,
      email: row.email,
      orgId: row.orgId,
      orgRole: row.role,
      orgMemberCount: row.memberCount,
      plan: row.plan,
      scopes: effectiveScopes(row.scopes, row.role),
    };
    attachUsageSnapshot(principal, row.day, row.usage);
    return principal;
  }

  private refuse(outcome: Parameters<AuthMetrics['verification']>[0]): null {
    this.metrics.verification(outcome);
    return null;
  }

  private async fetch(lookups: string[], day: string): Promise<KeyVerificationRow[]> {
    if (this.ownDirectory) return this.keys.findForVerification(lookups, true, day);
    const rows = await this.keys.findForVerification(lookups, false, day);
    const live = rows.filter((r) => !r.revokedAt);
    const contexts = await this.directory.memberContexts(live.map((r) => ({ userId: r.userId, orgId: r.orgId })));
    return rows.map((r) => {
      const c = contexts.get(memberKey(r.userId, r.orgId));
      return c ? { ...r, email: c.email, role: c.role, plan: c.plan, memberCount: c.memberCount } : r;
    });
  }
}
