import { Inject, Injectable, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import { AuthMetrics, type VerificationOutcome } from '../auth/auth-metrics.js';
import { ActivityEvents } from '../events/activity-events.js';
import { METERS } from '../common/meters.js';
import { MeterRegistry } from '../common/meter-registry.js';
import { METRICS_OPTIONS, type MetricsOptions } from './metrics.options.js';
import { pgPoolOf } from '../database/pg-pool.js';
import { HttpDurationMetric } from './http-duration.js';
import { DeprecationUsage } from '../versioning/deprecation-usage.js';

/** `http_request_duration_seconds` buckets, in seconds. */
export const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The parts of a `pg` Pool the gauges read. */
interface PoolStats {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * The standalone app's Prometheus registry. prom-client lives here only: the exported module
 * reports through AuthMetrics and ActivityEvents, which this subscribes to. One registry per
 * app (not prom-client's global one), so two apps in one process never share series.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly httpDuration: HttpDurationMetric;

  private readonly renderCacheMs: number;

  constructor(
    authMetrics: AuthMetrics,
    activity: ActivityEvents,
    @InjectDataSource() dataSource: DataSource,
    @Optional() @Inject(METRICS_OPTIONS) options?: MetricsOptions,
    @Optional() deprecations?: DeprecationUsage,
    @Optional() meters?: MeterRegistry,
  ) {
    this.renderCacheMs = options?.renderCacheMs ?? 1_000;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });

    this.httpDuration = new HttpDurationMetric(this.registry, HTTP_BUCKETS);

    // Counted in AuthMetrics on the hot path (a field increment), exported at scrape time.
    const outcomes = Object.keys(authMetrics.counts) as VerificationOutcome[];
    const exportedOutcomes = Object.fromEntries(outcomes.map((o) => [o, authMetrics.counts[o]])) as Record<
      VerificationOutcome,
      number
    >;
    const verifications = new Counter({
      name: 'api_key_verifications_total',
      help: 'API key verifications by outcome (malformed = bad format or checksum, refused before any database read)',
      labelNames: ['outcome'],
      registers,
      collect() {
        for (const outcome of outcomes) {
          const now = authMetrics.counts[outcome];
          this.inc({ outcome }, now - exportedOutcomes[outcome]);
          exportedOutcomes[outcome] = now;
        }
      },
    });
    // Every outcome is exported from the start, so rates work before the first failure.
    for (const outcome of outcomes) verifications.inc({ outcome }, 0);

    const minted = new Counter({ name: 'api_keys_minted_total', help: 'API keys minted', registers });
    const revoked = new Counter({ name: 'api_keys_revoked_total', help: 'Successful revoke requests', registers });
    const charged = new Counter({
      name: 'usage_charged_units_total',
      help: 'Units charged to the daily meters, by meter',
      labelNames: ['meter'],
      registers,
    });
    const refused = new Counter({
      name: 'usage_charge_refusals_total',
      help: 'Charges refused because they would pass the daily limit (nothing recorded), by meter',
      labelNames: ['meter'],
      registers,
    });
    const refunded = new Counter({
      name: 'usage_refunded_units_total',
      help: 'Units given back because the charged request then failed, by meter (net usage = charged - refunded)',
      labelNames: ['meter'],
      registers,
    });
    const refundsPending = new Gauge({
      name: 'usage_refunds_pending',
      help: 'Refunds kept in memory because the database could not be reached; retried until they land',
      registers,
    });
    // Every meter the deployment counts has its series from the start, at 0.
    for (const meter of meters?.names ?? METERS) {
      charged.inc({ meter }, 0);
      refused.inc({ meter }, 0);
      refunded.inc({ meter }, 0);
    }
    activity.on((event) => {
      switch (event.type) {
        case 'api_key.minted':
          return minted.inc();
        case 'api_key.revoked':
          return revoked.inc();
        case 'usage.charged':
          return charged.inc({ meter: event.meter }, event.count);
        case 'usage.refused':
          return refused.inc({ meter: event.meter });
        case 'usage.refunded':
          return refunded.inc({ meter: event.meter }, event.count);
        case 'usage.refunds_pending':
          return refundsPending.set(event.pending);
      }
    });

    const deprecated = new Counter({
      name: 'api_deprecated_requests_total',
      help: 'Requests that used a deprecated operation, parameter or API version, by org, target and version served',
      labelNames: ['org', 'target', 'version'],
      registers,
    });
    deprecations?.onUse((use) =>
      deprecated.inc({ org: use.orgId ?? 'none', target: use.target, version: use.version }),
    );

    // The verification cache: counted in AuthMetrics on the hot path, exported at scrape time.
    const exported = { key: { hit: 0, miss: 0 }, session: { hit: 0, miss: 0 } };
    new Counter({
      name: 'verification_cache_lookups_total',
      help: 'Verification cache lookups under a valid lease, by cache (key, session) and result (hit, miss); hit ratio = hit / (hit + miss)',
      labelNames: ['cache', 'result'],
      registers,
      collect() {
        for (const cache of ['key', 'session'] as const) {
          for (const result of ['hit', 'miss'] as const) {
            const now = authMetrics.cacheCounts[cache][result];
            this.inc({ cache, result }, now - exported[cache][result]);
            exported[cache][result] = now;
          }
        }
      },
    });
    new Gauge({
      name: 'verification_cache_lease_valid',
      help: '1 while this instance holds its cache lease and may answer from its cache; 0 while it reads the database',
      registers,
      collect() {
        this.set(authMetrics.leaseValid() ? 1 : 0);
      },
    });
    const acks = new Histogram({
      name: 'verification_invalidation_ack_seconds',
      help: 'How long a change (revoke, directory change) waited until every leased instance had applied it',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    authMetrics.onCache({ acknowledged: (seconds) => acks.observe(seconds) });

    const pool = (): PoolStats | undefined => pgPoolOf(dataSource);
    const poolGauge = (name: string, help: string, read: (p: PoolStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const p = pool();
          if (p) this.set(read(p));
        },
      });
    poolGauge('db_pool_connections', 'Connections open in the database pool', (p) => p.totalCount);
    poolGauge('db_pool_idle_connections', 'Idle connections in the database pool', (p) => p.idleCount);
    poolGauge('db_pool_waiting_requests', 'Queries waiting for a free pool connection', (p) => p.waitingCount);
  }

  /** Per request (see HttpDurationMetric: a cached child per series). */
  observeHttp(method: string, route: string, statusCode: number, seconds: number): void {
    this.httpDuration.observe(method, route, statusCode, seconds);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * The rendered registry, cached for METRICS_CACHE_MS (default 1 s) and shared by concurrent
   * scrapes: a scrape flood costs one render a second, not one per request.
   */
  render(): Promise<string> {
    const now = Date.now();
    if (this.rendered && now - this.rendered.at < this.renderCacheMs) return this.rendered.text;
    const text = this.registry.metrics();
    this.rendered = { at: now, text };
    text.catch(() => {
      if (this.rendered?.text === text) this.rendered = null;
    });
    return text;
  }

  private rendered: { at: number; text: Promise<string> } | null = null;
}
