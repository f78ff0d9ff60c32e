import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ApiKeyStore } from './api-key-store.js';

const MINUTE = 60_000;

/**
 * Records `last_used_at` behind the response: the first use of a key is written at once (in
 * the next batch), later uses at most once a minute per key, many keys per UPDATE.
 *
 * Not a DataLoader like the per-turn read batchers: nobody awaits an answer (the request has
 * already been answered), most calls are dropped by the one-minute window before they could be
 * queued, a key's pending stamp is overwritten rather than queued twice, and shutdown must drain
 * what is pending or in flight before the pool closes. DataLoader has none of these, so it is a
 * time-windowed write-behind of its own.
 */
@Injectable()
export class LastUsedWriter implements OnApplicationShutdown {
  private readonly logger = new Logger('LastUsedWriter');
  private pending = new Map<string, Date>();
  /** When this instance last wrote each key, to skip work inside the one-minute window. */
  private readonly written = new Map<string, number>();
  private scheduled = false;
  private inFlight: Promise<void> | null = null;

  constructor(private readonly keys: ApiKeyStore) {}

  /**
   * Whether a use of the key at `t` would be written: not when the stored stamp, or this
   * instance's last write of it, is less than a minute old. The verifier asks it, so that a use
   * inside the minute is not even held for the request's admission.
   */
  due(keyId: string, storedLastUsed: Date | null, t: number): boolean {
    if (storedLastUsed && t - storedLastUsed.getTime() < MINUTE) return false;
    const last = this.written.get(keyId);
    return last === undefined || t - last >= MINUTE;
  }

  touch(keyId: string, storedLastUsed: Date | null, now: Date): void {
    const t = now.getTime();
    if (!this.due(keyId, storedLastUsed, t)) return;
    this.written.set(keyId, t);
    if (this.written.size > 10_000) this.prune(t);
    this.pending.set(keyId, now);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => void this.flush());
    }
  }

  /** Writes whatever is pending; resolves when the database has it. */
  async flush(): Promise<void> {
    this.scheduled = false;
    if (this.inFlight) await this.inFlight;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.inFlight = this.keys
      .touchLastUsed([...batch.keys()], [...batch.values()])
      .catch((error: unknown) => {
        // Losing a last-used stamp is acceptable; failing a request for it is not.
        for (const id of batch.keys()) this.written.delete(id);
        this.logger.warn(`could not record last use of ${batch.size} key(s): ${(error as Error).message}`);
      })
      .finally(() => {
        this.inFlight = null;
      });
    await this.inFlight;
  }

  /**
   * Until nothing is pending or in flight. `flush()` alone may return while another caller's
   * write is still running; at shutdown the pool must not close under it.
   */
  async drain(): Promise<void> {
    while (this.inFlight || this.pending.size > 0) {
      if (this.inFlight) await this.inFlight;
      else await this.flush();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.drain();
  }

  private prune(now: number): void {
    for (const [id, at] of this.written) if (now - at >= MINUTE) this.written.delete(id);
  }
}
