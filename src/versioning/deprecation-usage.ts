import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';

/** One use of something deprecated: who, where, under which version. */
export interface DeprecatedUse {
  orgId: string | null;
  /** The operationId, `operationId?parameter`, or `version`. */
  target: string;
  version: string;
}

type Listener = (use: DeprecatedUse) => void;

/**
 * Counts uses of deprecated operations, parameters and versions, so an operator knows whom to
 * tell. Free of any metrics library (the standalone app exports the counts to Prometheus); one
 * log line per org, target and UTC day, so a busy caller does not flood the log.
 */
@Injectable()
export class DeprecationUsage {
  private readonly logger = new Logger('Deprecation');
  private readonly listeners: Listener[] = [];
  private readonly logged = new LRUCache<string, true>({ max: 10_000 });

  onUse(listener: Listener): void {
    this.listeners.push(listener);
  }

  record(use: DeprecatedUse, day: string): void {
    for (const l of this.listeners) l(use);
    const key = `${use.orgId ?? '-'}|${use.target}|${day}`;
    if (this.logged.has(key)) return;
    this.logged.set(key, true);
    this.logger.warn(`deprecated ${use.target} used by org ${use.orgId ?? '(none)'} with API version ${use.version}`);
  }
}
