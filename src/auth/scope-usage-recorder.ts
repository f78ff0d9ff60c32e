import { Injectable } from '@nestjs/common';
import { BatchedCounter } from '../common/batched-counter.js';
import { ApiKeyStore, type ScopeUse } from './api-key-store.js';

const DAY_MS = 86_400_000;

/**
 * Counts, per key, scope and UTC day, the requests a key made on routes that require scopes, and
 * writes the counts behind the responses: whatever gathered in a second goes out in one upsert
 * (BatchedCounter: no database write per request, a lost batch dropped, shutdown drained), like
 * the verification outcomes (VerificationOutcomeRecorder).
 */
@Injectable()
export class ScopeUsageRecorder extends BatchedCounter<ScopeUse> {
  /**
   * Per key, its pending (scope, day) counts: a key holds few scopes, so a short array scanned by
   * identity beats a Map keyed by a string built per request (that string's hash is computed anew).
   */
  private pending = new Map<string, ScopeUse[]>();
  /** The UTC day of the last record, and the instants it spans (computed once a day, not per request). */
  private day = '';
  private dayStart = 0;
  private dayEnd = 0;

  constructor(private readonly keys: ApiKeyStore) {
    super('ScopeUsageRecorder', (n) => `the scope use of ${n} key-scope-day(s)`);
  }

  record(keyId: string, scopes: readonly string[], now: Date): void {
    const t = now.getTime();
    if (t < this.dayStart || t >= this.dayEnd) {
      this.dayStart = t - (t % DAY_MS);
      this.dayEnd = this.dayStart + DAY_MS;
      this.day = new Date(this.dayStart).toISOString().slice(0, 10);
    }
    let uses = this.pending.get(keyId);
    if (!uses) this.pending.set(keyId, (uses = []));
    let added = 0;
    for (const scope of scopes) {
      const use = uses.find((u) => u.scope === scope && u.day === this.day);
      if (use) {
        use.requests++;
        if (t > use.lastUsedAt.getTime()) use.lastUsedAt = now;
      } else {
        uses.push({ keyId, scope, day: this.day, requests: 1, lastUsedAt: now });
        added++;
      }
    }
    if (added > 0) this.grew(added);
  }

  protected take(): ScopeUse[] {
    const batch = [...this.pending.values()].flat();
    this.pending = new Map();
    return batch;
  }

  protected write(uses: ScopeUse[]): Promise<void> {
    return this.keys.recordScopeUse(uses);
  }
}
