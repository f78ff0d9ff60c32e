import { randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { JobInsert, JobWithMetadata, PgBoss } from 'pg-boss';
import { loadEventPeers } from './event-peers.js';
import { Settings } from '../settings/settings.js';
import { EventOutbox } from '../events/event-outbox.js';
import { AuditService } from '../audit/audit.service.js';
import { Transactions } from '../database/transactions.js';
import { EVENTS_SETTINGS, type EventsSettings } from './events-settings.js';
import { OutboundGuard } from './outbound-guard.js';
import { SecretBox } from './secret-box.js';
import { WebhookSender } from './webhook-sender.js';
import { WebhooksRepository, type OutboxRow, type RelayTarget, type SqlExecutor } from './webhooks.repository.js';
import {
  DAY_MS,
  DELIVER_QUEUE,
  DELIVERY_RETENTION_DAYS,
  DELIVERY_SLOTS,
  deliveryJobId,
  EXPIRY_SCAN_QUEUE,
  EXPIRY_WINDOWS,
  RELAY_BATCH,
  retryOptionsOf,
  SCAN_BATCH,
  type DeliverJob,
} from './webhook-jobs.js';

/**
 * The queue side of events, on pg-boss (PostgreSQL, SKIP LOCKED): the relay from the outbox to
 * delivery jobs, the delivery workers (any number of instances; pg-boss hands each job to one
 * worker at a time, retries with exponential backoff and jitter), and the expiry scan schedule.
 * pg-boss has its own small pool, so on the embedded database it connects through the server's
 * Unix socket and never holds the app's single connection.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private boss: PgBoss | null = null;
  private relayTimer: NodeJS.Timeout | null = null;
  private relaying: Promise<void> | null = null;
  private relayAgain = false;
  private stopping = false;
  private stopped: Promise<void> | null = null;
  private readonly sender: WebhookSender;

  constructor(
    @Inject(EVENTS_SETTINGS) private readonly settings: EventsSettings,
    private readonly repo: WebhooksRepository,
    private readonly outbox: EventOutbox,
    private readonly core: Settings,
    private readonly audit: AuditService,
    private readonly transactions: Transactions,
  ) {
    this.sender = new WebhookSender({
      guard: new OutboundGuard({ allowCidrs: settings.allowCidrs, allowedPorts: settings.allowedPorts }),
      timeoutMs: settings.timeoutMs,
      httpsOnly: settings.httpsOnly,
    });
  }

  get available(): boolean {
    return this.boss !== null;
  }

  async onApplicationBootstrap(): Promise<void> {
    const s = this.settings;
    if (!s.queue) {
      this.logger.warn('No job queue connection: webhooks are stored but not delivered');
      return;
    }
    const { PgBoss } = await loadEventPeers();
    const boss = new PgBoss({
      ...s.queue,
      max: s.queuePoolMax,
      schema: 'pgboss',
      application_name: 'keys-usage-identity-events',
      supervise: s.worker,
      schedule: s.worker,
    });
    boss.on('error', (error: Error) => this.logger.warn(`job queue: ${error.message}`));
    await boss.start();
    const retry = retryOptionsOf(this.settings);
    await boss.createQueue(DELIVER_QUEUE, {
      ...retry,
      expireInSeconds: Math.ceil(s.timeoutMs / 1000) + 50,
      deleteAfterSeconds: 7 * 86_400,
    });
    await boss.updateQueue(DELIVER_QUEUE, retry);
    await boss.createQueue(EXPIRY_SCAN_QUEUE, { retryLimit: 0, expireInSeconds: 300 });
    this.boss = boss;
    if (!s.worker) return;
    const pollingIntervalSeconds = Math.max(0.5, s.pollIntervalMs / 1000);
    // Jobs are grouped by org: a group at its share is skipped by the fetch, so one org's slow
    // receiver holds at most `orgConcurrency` slots and the others keep delivering.
    const deliverOptions = {
      includeMetadata: true,
      batchSize: 1,
      localConcurrency: DELIVERY_SLOTS,
      localGroupConcurrency: s.orgConcurrency,
      pollingIntervalSeconds,
    } as const;
    await boss.work<DeliverJob, void, typeof deliverOptions>(DELIVER_QUEUE, deliverOptions, async ([job]) => {
      await this.deliver(job);
    });
    await boss.work(EXPIRY_SCAN_QUEUE, { pollingIntervalSeconds: 5 }, async () => {
      await this.scanExpiries();
    });
    await boss.schedule(EXPIRY_SCAN_QUEUE, s.expiryScanCron);
    this.outbox.onWritten(() => void this.relay());
    this.relayTimer = setInterval(() => void this.relay(), s.pollIntervalMs);
    this.relayTimer.unref();
    void this.relay();
  }

  /**
   * No new relay runs, and the queue starts stopping (in-flight deliveries get up to 5 s) while
   * the HTTP server drains its requests; nothing awaited here, so the server stops accepting
   * without delay. Stopping it only after the requests and the last-used writes had drained could
   * pass the process's 8 s shutdown deadline on a slow database (seen in faults-graceful-shutdown,
   * 600 ms per statement). A delivery cut short is retried by pg-boss.
   */
  beforeApplicationShutdown(): void {
    this.stopping = true;
    if (this.relayTimer) clearInterval(this.relayTimer);
    const boss = this.boss;
    this.boss = null;
    this.stopped = boss?.stop({ graceful: true, timeout: 5_000 }) ?? null;
  }

  /** After the HTTP server closed: the queue's stop and a running relay end (a relay cut short leaves its events in the outbox). */
  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.relaying, this.stopped]);
  }

  /**
   * Sends one event to one endpoint of an org now (the test event, a retry through the API), as a
   * new job, inserted through `tx` so it commits with the caller's audit row.
   */
  async enqueue(orgId: string, job: DeliverJob, tx: SqlExecutor): Promise<string> {
    if (!this.boss) throw new Error('the job queue is not running');
    const id = randomUUID();
    await this.boss.send(DELIVER_QUEUE, job, { id, group: { id: orgId }, db: tx, ...retryOptionsOf(this.settings) });
    return id;
  }

  /** The message of a past delivery job, while pg-boss keeps it. */
  async findJob(jobId: string): Promise<DeliverJob | null> {
    if (!this.boss) return null;
    const [job] = await this.boss.findJobs<DeliverJob>(DELIVER_QUEUE, { id: jobId });
    return job?.data ?? null;
  }

  /** Moves outbox rows into delivery jobs until the outbox is empty; one run at a time per process. */
  relay(): Promise<void> {
    if (this.relaying) {
      this.relayAgain = true;
      return this.relaying;
    }
    this.relaying = (async () => {
      try {
        do {
          this.relayAgain = false;
          if (this.stopping) return;
          if (await this.repo.outboxHasRows()) {
            while (
              (await this.repo.relayBatch(RELAY_BATCH, (events, targets, tx) =>
                this.insertJobs(events, targets, tx),
              )) === RELAY_BATCH
            );
          }
        } while (this.relayAgain);
      } catch (error) {
        this.logger.warn(`relay: ${(error as Error).message}`);
      } finally {
        this.relaying = null;
      }
    })();
    return this.relaying;
  }

  private async insertJobs(events: OutboxRow[], targets: RelayTarget[], tx: SqlExecutor): Promise<void> {
    if (targets.length === 0 || !this.boss) {
      if (targets.length > 0) throw new Error('the job queue is not running');
      return;
    }
    const byId = new Map(events.map((e) => [e.id, e]));
    const jobs: JobInsert<DeliverJob>[] = targets.map((t) => {
      const e = byId.get(t.eventId)!;
      return {
        id: deliveryJobId(t.eventId, t.endpointId),
        data: {
          endpointId: t.endpointId,
          event: { id: e.id, type: e.type, timestamp: e.createdAt.toISOString(), data: e.data },
        },
        group: { id: e.orgId },
        ...retryOptionsOf(this.settings),
      };
    });
    await this.boss.insert(DELIVER_QUEUE, jobs, { db: tx });
  }

  /** One attempt. A failure throws, so pg-boss schedules the next attempt; the last one marks the endpoint failing. */
  async deliver(job: JobWithMetadata<DeliverJob>): Promise<void> {
    const { endpointId, event } = job.data;
    const endpoint = await this.repo.findEndpointById(endpointId);
    // Deleted, or disabled since: nothing to deliver (a test event still goes to a disabled endpoint).
    if (!endpoint || (!endpoint.enabled && event.type !== 'webhook.test')) return;
    if (!this.core.apiKeySecret) throw new Error('API_KEY_SECRET is unset: signing secrets cannot be opened');
    const box = new SecretBox(this.core.apiKeySecret);
    const started = this.core.clock.now();
    // During a rotation's overlap the secret rotated out signs too, so receivers can switch at their pace.
    const overlapping =
      endpoint.previousSecretBox && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > started;
    const secrets = [box.open(endpoint.secretBox), ...(overlapping ? [box.open(endpoint.previousSecretBox!)] : [])];
    const body = JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
    const result = await this.sender.send(endpoint.url, secrets, { id: event.id, body });
    const now = this.core.clock.now();
    await this.repo.recordAttempt(
      {
        endpointId,
        eventId: event.id,
        eventType: event.type,
        jobId: job.id,
        attempt: job.retryCount + 1,
        status: result.ok ? 'succeeded' : 'failed',
        responseStatus: result.status,
        latencyMs: result.latencyMs,
        responseBody: result.body,
        error: result.error,
      },
      now,
    );
    if (result.ok) {
      if (endpoint.failingSince) await this.repo.clearFailing(endpointId);
      return;
    }
    if (job.retryCount >= job.retryLimit) {
      // The org is told in its audit log, once, in the transaction that marks the endpoint.
      const marked = await this.transactions.run(async (manager) => {
        const changed = await this.repo.markFailing(endpointId, now, manager);
        if (changed) {
          await this.audit.record(manager, {
            orgId: endpoint.orgId,
            action: 'webhook.failing',
            actor: { type: 'system', id: null, source: 'webhook_delivery' },
            target: { type: 'webhook', id: endpointId },
            details: {
              url: endpoint.url,
              event_id: event.id,
              event_type: event.type,
              attempts: job.retryCount + 1,
              last_error: result.error,
            },
          });
        }
        return changed;
      });
      if (marked) this.logger.warn(`webhook ${endpointId} marked failing after ${job.retryCount + 1} attempts`);
    }
    throw new Error(result.error ?? 'delivery failed');
  }

  /** The scheduled scan: `api_key.expiring` 7 days and 1 day ahead, then `api_key.expired`, in bounded batches. */
  async scanExpiries(): Promise<number> {
    const now = this.core.clock.now();
    let total = 0;
    for (const [ahead, notBefore, mark, type] of EXPIRY_WINDOWS) {
      let n: number;
      do {
        n = await this.repo.emitExpiryBatch(now, ahead, notBefore, mark, type, SCAN_BATCH);
        total += n;
      } while (n === SCAN_BATCH);
    }
    if (total > 0) this.outbox.written();
    await this.prune(now);
    return total;
  }

  /**
   * Retention, in bounded batches on the same schedule: delivery logs after 30 days, past days'
   * threshold marks after 2; signing secrets rotated out, once their overlap is over.
   */
  async prune(now: Date): Promise<void> {
    const deliveriesBefore = new Date(now.getTime() - DELIVERY_RETENTION_DAYS * DAY_MS);
    const marksBefore = new Date(now.getTime() - 2 * DAY_MS);
    for (let i = 0; i < 10 && (await this.repo.pruneDeliveries(deliveriesBefore, SCAN_BATCH)) === SCAN_BATCH; i++);
    for (let i = 0; i < 10 && (await this.repo.pruneThresholdMarks(marksBefore, SCAN_BATCH)) === SCAN_BATCH; i++);
    await this.repo.clearExpiredPreviousSecrets(now);
  }
}
