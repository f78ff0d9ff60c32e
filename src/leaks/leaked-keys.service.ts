import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ApiKeysService } from '../api-keys/api-keys.service.js';
import { ApiKeyRepository } from '../api-keys/api-key.repository.js';
import { hashApiKey, hashesEqual, parseApiKey } from '../auth/api-key-format.js';
import { Settings } from '../settings/settings.js';

export interface GithubTokenReport {
  token_hash: string;
  token_type: string;
  label: 'true_positive' | 'false_positive';
}

export type LeakSource = 'github_secret_scanning' | 'public_revocation';

/**
 * Keys reported as leaked are revoked at once, whoever owns them. A candidate is a true positive
 * only when its shape and checksum hold (no I/O otherwise), its lookup exists, and the keyed hash
 * matches in constant time. Revocation goes through ApiKeysService, the same statement as
 * DELETE /api-keys/{id}, which audits each (actor: the system, with the source).
 */
@Injectable()
export class LeakedKeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly apiKeys: ApiKeysService,
    private readonly settings: Settings,
  ) {}

  /** Revokes every genuine key among `candidates`; returns which candidates were genuine (same order). */
  async revoke(candidates: string[], source: LeakSource): Promise<boolean[]> {
    const secret = this.settings.apiKeySecret;
    if (!secret) return candidates.map(() => false);
    const lookups = candidates.map((c) => (typeof c === 'string' ? parseApiKey(c) : null));
    const wanted = [...new Set(lookups.filter((l): l is string => l !== null))];
    const rows = wanted.length > 0 ? await this.keys.findByLookups(wanted, this.settings.clock.now()) : [];
    const byLookup = new Map(rows.map((r) => [r.lookup, r]));
    const genuine = candidates.map((c, i) => {
      const row = lookups[i] ? byLookup.get(lookups[i]) : undefined;
      return row !== undefined && hashesEqual(row.keyHash, hashApiKey(secret, c));
    });
    const ids = [...new Set(candidates.flatMap((_, i) => (genuine[i] ? [byLookup.get(lookups[i]!)!.id] : [])))];
    await this.apiKeys.revokeLeaked(ids, source);
    return genuine;
  }

  /** GitHub's partner format: every reported token answered with its SHA-256, its type and a label. */
  async githubReport(tokens: Array<{ token: string; type: string }>): Promise<GithubTokenReport[]> {
    const genuine = await this.revoke(tokens.map((t) => t.token), 'github_secret_scanning');
    return tokens.map((t, i) => ({
      token_hash: createHash('sha256').update(t.token).digest('hex'),
      token_type: t.type,
      label: genuine[i] ? 'true_positive' : 'false_positive',
    }));
  }
}
