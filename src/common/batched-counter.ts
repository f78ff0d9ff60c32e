import { Logger, type OnApplicationShutdown } from '@nestjs/common';

/** How long counts gather before one write, unless a counter says otherwise: at most one statement per counter and instance per this many ms. */
export const COUNTER_FLUSH_MS = 1000;
/** Pending rows beyond which a write starts at once, so memory stays bounded. */
const MAX_PENDING = 20_000;

/**
 * Counts kept in memory on the request path and written behind the responses: whatever gathered
 * in `flushMs` goes out as one batch, written by one statement (no database write per request). A
 * lost batch (the database briefly down) is logged and dropped: failing or delaying a request for
 * a count is worse. Shutdown drains what is pending or in flight before the pool closes.
 *
 * A subclass keeps its pending rows in whatever shape its hot path counts fastest, reports each
 * new row with `grew`, and hands them over in `take` (ScopeUsageRecorder, VerificationOutcomeRecorder).
 */
export abstract class BatchedCounter<Row> implements OnApplicationShutdown {
  private readonly logger: Logger;
  private size = 0;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;

  protected constructor(
    name: string,
    /** Names a batch in the warning when it is lost, e.g. `the scope use of %d key-scope-day(s)`. */
    private readonly describe: (rows: number) => string,
    private readonly flushMs = COUNTER_FLUSH_MS,
  ) {
    this.logger = new Logger(name);
  }

  /** What is pending, handed over for one write; the subclass starts afresh. */
  protected abstract take(): Row[];

  /** Writes one batch in one statement. */
  protected abstract write(rows: Row[]): Promise<void>;

  /**
   * Called after the subclass started `rows` new pending rows (a count added to a row it already
   * holds needs no call: that row's write is already due). Starts the write at once past the
   * bound, else makes sure one is due within `flushMs`.
   */
  protected grew(rows: number): void {
    this.size += rows;
    if (this.size >= MAX_PENDING) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Nothing pending and nothing being written: a read of the database sees every count so far. */
  get idle(): boolean {
    return this.size === 0 && this.inFlight === null;
  }

  /** Writes whatever is pending; resolves when the database has it (or the batch was dropped). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.inFlight) await this.inFlight;
    if (this.size === 0) return;
    const rows = this.take();
    this.size = 0;
    this.inFlight = this.write(rows)
      .catch((error: unknown) => {
        this.logger.warn(`could not record ${this.describe(rows.length)}: ${(error as Error).message}`);
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
    while (this.inFlight || this.size > 0) {
      if (this.inFlight) await this.inFlight;
      else await this.flush();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.drain();
  }
}
