import { Injectable, Logger } from '@nestjs/common';

export interface WebhookAuditEntry {
  orgId: string;
  /** A user id, or `system` for what the service did on its own (a leak report, a failing endpoint). */
  actor: string;
  action: 'webhook.created' | 'webhook.updated' | 'webhook.deleted' | 'webhook.failing' | 'api_key.revoked_leaked';
  targetId: string;
  details?: Record<string, unknown>;
}

/**
 * THE seam where this feature's audit records go. The audit log (issue 15, branch `gov`) was not
 * merged when this was written: wire `AuditService.record(...)` in here and nowhere else. Until
 * then the entry is logged (no secret is ever in it).
 */
@Injectable()
export class WebhookAudit {
  private readonly logger = new Logger('Audit');

  async record(entry: WebhookAuditEntry): Promise<void> {
    this.logger.log(`${entry.action} org=${entry.orgId} actor=${entry.actor} target=${entry.targetId}`);
  }
}
