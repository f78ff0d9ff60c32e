import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { AuditService } from './audit.service.js';

/** How often the retention job runs; each run deletes in bounded batches (see AuditService.prune). */
export const AUDIT_PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const FIRST_RUN_AFTER_MS = 60 * 1000;

/**
 * Prunes audit events past AUDIT_RETENTION_DAYS once an hour (the first run a minute after
 * start). The timers never keep a process alive, and several replicas pruning at once skip each
 * other's rows. A failed run is logged and retried at the next tick.
 */
@Injectable()
export class AuditRetentionJob implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(AuditRetentionJob.name);
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(private readonly audit: AuditService) {}

  onApplicationBootstrap(): void {
    this.timer = setTimeout(() => {
      this.tick();
      this.timer = setInterval(() => this.tick(), AUDIT_PRUNE_INTERVAL_MS);
      this.timer.unref();
    }, FIRST_RUN_AFTER_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private tick(): void {
    if (this.running) return;
    this.running = this.audit
      .prune()
      .then((deleted) => {
        if (deleted > 0) this.logger.log(`audit retention: pruned ${deleted} events`);
      })
      .catch((error: unknown) => this.logger.warn(`audit retention failed: ${(error as Error).message}`))
      .finally(() => {
        this.running = null;
      });
  }
}
