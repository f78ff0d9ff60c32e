import { Injectable } from '@nestjs/common';
import { ApiKeyPolicyRepository } from '../api-keys/api-key-policy.repository.js';
import { KeyChanges } from '../api-keys/key-changes.js';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { keyEventData } from '../events/event-types.js';
import { Settings } from '../settings/settings.js';
import { KeyPolicyRepository } from './key-policy.repository.js';

const DAY_MS = 86_400_000;
/** The warning comes this long before the revoke. */
export const STALE_WARNING_DAYS = 7;
export const STALE_KEYS_INTERVAL_MS = 60 * 60 * 1000;
const FIRST_RUN_AFTER_MS = 90 * 1000;
const BATCH = 200;
const SYSTEM = { type: 'system', id: null, source: 'stale_keys' } as const;

/**
 * The periodic job `stale-keys`: in every org whose key policy sets `stale_after_days`, keys unused
 * that long (since their last use, or their mint if never used) are revoked, each audited with the
 * system as actor and announced as `api_key.revoked` with reason `stale`; `api_key.stale_warning`
 * goes out 7 days before (a key already past the threshold when the policy is set is revoked at
 * the next run, unwarned). Each key is warned and revoked once whichever instance runs it: the
 * warning is recorded in the same statement that claims it, and the revoke only changes a key
 * that is still unrevoked and still idle (a key used meanwhile is left alone).
 */
@Injectable()
export class StaleKeysJob {
  constructor(
    private readonly policies: KeyPolicyRepository,
    private readonly keys: ApiKeyPolicyRepository,
    private readonly changes: KeyChanges,
    private readonly settings: Settings,
    jobs: PeriodicJobs,
  ) {
    jobs.add({
      name: 'stale-keys',
      everyMs: STALE_KEYS_INTERVAL_MS,
      firstRunAfterMs: FIRST_RUN_AFTER_MS,
      run: () => this.run(),
    });
  }

  /** One sweep of every org with a stale threshold; resolves to the number of keys revoked. */
  async run(): Promise<number> {
    let revoked = 0;
    for (const { orgId, staleAfterDays } of await this.policies.withStaleThreshold()) {
      const now = this.settings.clock.now();
      const idleSince = new Date(now.getTime() - staleAfterDays * DAY_MS);
      for (;;) {
        const ids = await this.keys.staleKeyIds(orgId, idleSince, now, BATCH);
        const n = await this.changes.revokeStale(
          ids.map((keyId) => ({
            change: { orgId, keyId, idleSince, at: now },
            audit: (k) => ({
              orgId,
              action: 'api_key.revoked_as_stale',
              actor: SYSTEM,
              target: { type: 'api_key', id: k.id },
              details: { name: k.name, lookup: k.lookup, owner_id: k.userId, stale_after_days: staleAfterDays },
            }),
            event: (k) => ({ orgId, type: 'api_key.revoked', data: { ...keyEventData(k), reason: 'stale' }, at: now }),
          })),
        );
        revoked += n;
        // A batch where another instance revoked some first is still done: only a full batch may have more.
        if (ids.length < BATCH) break;
      }
      // After the revokes, so a key revoked now is not also warned now.
      await this.warn(orgId, staleAfterDays, now);
    }
    return revoked;
  }

  private async warn(orgId: string, staleAfterDays: number, now: Date): Promise<void> {
    const warnFrom = new Date(now.getTime() - (staleAfterDays - STALE_WARNING_DAYS) * DAY_MS);
    for (;;) {
      const warned = await this.changes.warnStale({
        change: { orgId, idleSince: warnFrom, now, limit: BATCH },
        event: (k) => ({
          orgId,
          type: 'api_key.stale_warning',
          data: {
            ...keyEventData(k),
            idle_since: k.idleSince.toISOString(),
            revoked_after: new Date(k.idleSince.getTime() + staleAfterDays * DAY_MS).toISOString(),
          },
          at: now,
        }),
      });
      if (warned < BATCH) return;
    }
  }
}
