import { Histogram, type Registry } from 'prom-client';

type Labels = 'method' | 'route' | 'status_code';
type Child = ReturnType<Histogram<Labels>['labels']>;

/**
 * `http_request_duration_seconds`, observed on every request: prom-client's Histogram, with one
 * child per (route, status, method) kept here and reached by three Map lookups on values Fastify
 * already holds, so a request neither builds a label object nor has `labels()` validate it again.
 */
export class HttpDurationMetric {
  private readonly histogram: Histogram<Labels>;
  /** route → status → method → the series' child. */
  private readonly children = new Map<string, Map<number, Map<string, Child>>>();
  private size = 0;

  /** `maxSeries`: a safety net; routes are templates and statuses few, so it is never reached in practice. */
  constructor(
    registry: Registry,
    buckets: readonly number[],
    private readonly maxSeries = 2000,
  ) {
    this.histogram = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status code',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [...buckets],
      registers: [registry],
    });
  }

  observe(method: string, route: string, statusCode: number, seconds: number): void {
    let byStatus = this.children.get(route);
    if (!byStatus) this.children.set(route, (byStatus = new Map<number, Map<string, Child>>()));
    let byMethod = byStatus.get(statusCode);
    if (!byMethod) byStatus.set(statusCode, (byMethod = new Map<string, Child>()));
    let child = byMethod.get(method);
    if (!child) {
      if (this.size >= this.maxSeries) return;
      child = this.histogram.labels({ method, route, status_code: String(statusCode) });
      byMethod.set(method, child);
      this.size++;
    }
    // prom-client throws on a value that is not finite; a clock oddity must not fail a request.
    if (Number.isFinite(seconds)) child.observe(seconds);
  }
}
