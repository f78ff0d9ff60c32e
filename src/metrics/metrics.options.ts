export interface MetricsOptions {
  /** When set, /metrics requires `Authorization: Bearer <token>`. */
  token?: string;
  /** When set, /metrics is served on this port only (0 = any free port) instead of the API port. */
  port?: number;
  /** Address the separate metrics port binds to. */
  host?: string;
}

export const METRICS_OPTIONS = Symbol('METRICS_OPTIONS');
