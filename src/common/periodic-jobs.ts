import { Injectable, Logger, Module, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';

/** A maintenance job the module runs on its own, in every process that has its tables. */
export interface PeriodicJob {
  /** Names the job in logs. */
  readonly name: string;
  /** Time between the starts of two runs; 0 or less: the job never runs on its own. */
  readonly everyMs: number;
  /** Delay of the first run after start (capped at `everyMs`), so restarts do not all run it at once. */
  readonly firstRunAfterMs: number;
  /** One run; what it resolves to is logged when it is a non-zero count of rows. */
  run(): Promise<unknown>;
}

interface Entry {
  job: PeriodicJob;
  timer: NodeJS.Timeout | null;
  running: Promise<void> | null;
}

/**
 * The one scheduler of the module's periodic jobs (usage and audit retention, and any sweep that
 * comes next). Owning modules register their jobs while the app builds (`add` in a provider's
 * constructor); every job starts once the app has booted and stops when it closes, waiting for a
 * run in progress. A run never overlaps the previous one of the same job (a tick that finds it
 * still running is skipped), a failed run is logged and tried again at the next tick, and the
 * timers never keep a process alive. The jobs delete in bounded batches of short statements, so
 * they share the embedded database's single connection without holding it, and several
 * instances running them at once only find less to do.
 */
@Injectable()
export class PeriodicJobs implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('PeriodicJobs');
  private readonly entries = new Map<string, Entry>();
  private started = false;

  /**
   * Registers a job; added after start, it is scheduled at once. A second job of a name already
   * registered is ignored: a module that Nest builds twice (forRoot's copy and forFeature's) runs its job once.
   */
  add(job: PeriodicJob): void {
    if (this.entries.has(job.name)) return;
    const entry: Entry = { job, timer: null, running: null };
    this.entries.set(job.name, entry);
    if (this.started) this.start(entry);
  }

  get names(): string[] {
    return [...this.entries.keys()];
  }

  onApplicationBootstrap(): void {
    this.started = true;
    for (const entry of this.entries.values()) this.start(entry);
  }

  async onModuleDestroy(): Promise<void> {
    this.started = false;
    for (const entry of this.entries.values()) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.timer = null;
    }
    await Promise.all([...this.entries.values()].map((e) => e.running));
  }

  /** Runs a job now (or joins the run in progress); resolves when that run is over. Never rejects. */
  runNow(name: string): Promise<void> {
    const entry = this.entries.get(name);
    if (!entry) return Promise.reject(new Error(`no periodic job "${name}"`));
    entry.running ??= entry.job
      .run()
      .then((result) => {
        if (typeof result === 'number' && result > 0) this.logger.log(`${name}: ${result} rows`);
      })
      .catch((error: unknown) =>
        this.logger.warn(`${name} failed (tried again at its next run): ${(error as Error).message}`),
      )
      .finally(() => (entry.running = null));
    return entry.running;
  }

  private start(entry: Entry): void {
    const every = entry.job.everyMs;
    if (every <= 0) return;
    this.schedule(entry, Math.min(entry.job.firstRunAfterMs, every));
  }

  private schedule(entry: Entry, delay: number): void {
    entry.timer = setTimeout(() => {
      void this.runNow(entry.job.name);
      if (this.started) this.schedule(entry, entry.job.everyMs);
    }, delay).unref();
  }
}

/** Provides the one PeriodicJobs to the modules whose jobs it runs (each imports this module). */
@Module({ providers: [PeriodicJobs], exports: [PeriodicJobs] })
export class PeriodicJobsModule {}
