/** How events are queued and delivered (the standalone server builds it from the environment). */
export interface EventsSettings {
  /** pg-boss's own connection: a URL, or the embedded database's Unix socket. Null: no queue (nothing is delivered). */
  queue: { connectionString: string } | { host: string; port: number; user: string; database: string } | null;
  /** pg-boss's pool size (it never borrows the app's pool). */
  queuePoolMax: number;
  /** Run the relay and delivery workers in this process. */
  worker: boolean;
  /** How often idle workers and the relay look for work. */
  pollIntervalMs: number;
  retryLimit: number;
  retryDelaySeconds: number;
  retryDelayMaxSeconds: number;
  timeoutMs: number;
  httpsOnly: boolean;
  /** CIDRs a webhook may reach although private or loopback (e.g. 127.0.0.1/32 in tests). */
  allowCidrs: string[];
  /** Port ranges (inclusive) a webhook may reach, whatever its address. */
  allowedPorts: Array<[number, number]>;
  /** Endpoints per org. */
  maxEndpointsPerOrg: number;
  /** Test and retry requests per org per minute, per instance; 0: no limit. */
  sendRatePerMinute: number;
  /** Delivery slots (of DELIVERY_SLOTS per instance) one org's jobs may hold at once. */
  orgConcurrency: number;
  /** Expiry scan schedule (cron, pg-boss schedules; at most once a minute). */
  expiryScanCron: string;
}

export const EVENTS_SETTINGS = Symbol('EVENTS_SETTINGS');
