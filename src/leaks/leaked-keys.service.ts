import { createHash } from 'node:crypto';
import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
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

/** Compared against when a lookup matches no key, so a miss costs the same HMAC and comparison as a hit. */
const NO_KEY_HASH = Buffer.alloc(32);

/**
 * Keys reported as leaked are revoked at once, whoever owns them. A candidate is a true positive
 * only when its shape and checksum hold (no I/O otherwise), its lookup exists, and the keyed hash
 * matches in constant time. Revocation goes through ApiKeysService, the same statement as
 * DELETE /api-keys/{id}, which audits each (actor: the system, with the source).
 */
@Injectable()
export class LeakedKeysService implements OnModuleDestroy {
  private readonly logger = new Logger(LeakedKeysService.name);
  /** Revocations still running after their report was answered. */
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly apiKeys: ApiKeysService,
    private readonly settings: Settings,
  ) {}

  /** Revokes every genuine key among `candidates`; returns which candidates were genuine (same order). */
  async revoke(candidates: string[], source: LeakSource): Promise<boolean[]> {
    const { genuine, keyIds } = await this.find(candidates);
    await this.apiKeys.revokeLeaked(keyIds, source);
    return genuine;
  }

  /**
   * POST /credentials/revoke: finds the genuine keys (the same read and the same hashing whatever
   * was sent), then revokes them after the caller has been answered. Writing a revocation and
   * waiting for every instance to apply it take time only a genuine key costs: an answer that
   * waited for them would tell the reporter which keys were real. A failure after the answer is
   * logged with the key ids; shutdown waits for revocations still running.
   */
  async report(candidates: string[]): Promise<void> {
    const { keyIds } = await this.find(candidates);
    if (keyIds.length === 0) return;
    // setImmediate: the revocation starts once this turn (which writes the answer) is over.
    const done = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.apiKeys.revokeLeaked(keyIds, 'public_revocation'))
      .then(
        () => undefined,
        (error: unknown) =>
          this.logger.error(
            `revoking ${keyIds.length} reported key(s) failed after the answer (${keyIds.join(', ')}): ${(error as Error)?.message ?? String(error)}`,
          ),
      )
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  /** GitHub's partner format: every reported token answered with its SHA-256, its type and a label. */
  async githubReport(tokens: Array<{ token: string; type: string }>): Promise<GithubTokenReport[]> {
    const genuine = await this.revoke(
      tokens.map((t) => t.token),
      'github_secret_scanning',
    );
    return tokens.map((t, i) => ({
      token_hash: createHash('sha256').update(t.token).digest('hex'),
      token_type: t.type,
      label: genuine[i] ? 'true_positive' : 'false_positive',
    }));
  }

  /** Which candidates are genuine keys (same order), and the ids of those keys. Reads only. */
  private async find(candidates: string[]): Promise<{ genuine: boolean[]; keyIds: string[] }> {
    const secret = this.settings.apiKeySecret;
    if (!secret) return { genuine: candidates.map(() => false), keyIds: [] };
    const lookups = candidates.map((c) => (typeof c === 'string' ? parseApiKey(c) : null));
    const wanted = [...new Set(lookups.filter((l): l is string => l !== null))];
    const rows = wanted.length > 0 ? await this.keys.findByLookups(wanted, this.settings.clock.now()) : [];
    const byLookup = new Map(rows.map((r) => [r.lookup, r]));
    const genuine = candidates.map((c, i) => {
      const lookup = lookups[i];
      if (lookup === null) return false;
      const row = byLookup.get(lookup);
      return hashesEqual(row?.keyHash ?? NO_KEY_HASH, hashApiKey(secret, c)) && row !== undefined;
    });
    const keyIds = [...new Set(candidates.flatMap((_, i) => (genuine[i] ? [byLookup.get(lookups[i]!)!.id] : [])))];
    return { genuine, keyIds };
  }
}
