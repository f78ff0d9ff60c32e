export interface MetricsOptions {
  /** When set, /metrics requires `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * Without a token, whether loopback clients (judged after TRUST_PROXY) may scrape /metrics on the
   * API port (METRICS_ALLOW_LOOPBACK; default: outside production only). Unset: nobody may.
   */
  allowLoopback?: boolean;
  /** When set, /metrics is served on this port only (0 = any free port) instead of the API port. */
  port?: number;
  /** Address the separate metrics port binds to. */
  host?: string;
  /** How long a rendered registry is served again (ms); default 1000, 0 = render every scrape. */
  renderCacheMs?: number;
}

export const METRICS_OPTIONS = Symbol('METRICS_OPTIONS');
