import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ApiKeyStore, type ScopeUse } from './api-key-store.js';

/** How long counts gather before one write: at most one statement per instance per this many ms. */
export const SCOPE_USE_FLUSH_MS = 1000;
/** Pending (key, scope, day) counts beyond which a write starts at once, so memory stays bounded. */
const MAX_PENDING = 20_000;
const DAY_MS = 86_400_000;

/**
 * Counts, per key, scope and UTC day, the requests a key made on routes that require scopes, and
 * writes the counts behind the responses: whatever gathered in a second goes out in one upsert
 * (no database write per request), like `last_used_at` (LastUsedWriter). A lost batch (the
 * database briefly down) is logged and dropped: failing or delaying a request for it is worse.
 * Shutdown drains what is pending before the pool closes.
 */
@Injectable()
export class ScopeUsageRecorder implements OnApplicationShutdown {
  private readonly logger = new Logger('ScopeUsageRecorder');
  /**
   * Per key, its pending (scope, day) counts: a key holds few scopes, so a short array scanned by
   * identity beats a Map keyed by a string built per request (that string's hash is computed anew).
   */
  private pending = new Map<string, ScopeUse[]>();
  private size = 0;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  /** The UTC day of the last record, and the instants it spans (computed once a day, not per request). */
  private day = '';
  private dayStart = 0;
  private dayEnd = 0;

  constructor(private readonly keys: ApiKeyStore) {}

  record(keyId: string, scopes: readonly string[], now: Date): void {
    const t = now.getTime();
    if (t < this.dayStart || t >= this.dayEnd) {
      this.dayStart = t - (t % DAY_MS);
      this.dayEnd = this.dayStart + DAY_MS;
      this.day = new Date(this.dayStart).toISOString().slice(0, 10);
    }
    let uses = this.pending.get(keyId);
    if (!uses) this.pending.set(keyId, (uses = []));
    for (const scope of scopes) {
      const use = uses.find((u) => u.scope === scope && u.day === this.day);
      if (use) {
        use.requests++;
        if (t > use.lastUsedAt.getTime()) use.lastUsedAt = now;
      } else {
        uses.push({ keyId, scope, day: this.day, requests: 1, lastUsedAt: now });
        this.size++;
      }
    }
    if (this.size >= MAX_PENDING) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), SCOPE_USE_FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Writes whatever is pending; resolves when the database has it (or the batch was dropped). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.inFlight) await this.inFlight;
    if (this.size === 0) return;
    const batch = [...this.pending.values()].flat();
    this.pending = new Map();
    this.size = 0;
    this.inFlight = this.keys
      .recordScopeUse(batch)
      .catch((error: unknown) => {
        this.logger.warn(
          `could not record the scope use of ${batch.length} key-scope-day(s): ${(error as Error).message}`,
        );
      })
      .finally(() => {
        this.inFlight = null;
      });
    await this.inFlight;
  }

  /** Until nothing is pending or in flight (see LastUsedWriter.drain). */
  async drain(): Promise<void> {
    while (this.inFlight || this.size > 0) {
      if (this.inFlight) await this.inFlight;
      else await this.flush();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.drain();
  }
}
