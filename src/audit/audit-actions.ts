/**
 * Every action the audit log records. One list, so `GET /orgs/{org_id}/audit-events?action=`
 * can refuse an unknown one (400) and the OpenAPI document can enumerate them. A feature that
 * records a new kind of change adds its name here.
 */
export const AUDIT_ACTIONS = [
  // API keys
  'api_key.minted',
  'api_key.revoked',
  'api_key.rotated',
  'api_key.updated',
  'api_key.revoked_by_admin',
  'api_key.revoked_as_leaked',
  // Orgs and members (today through the operator CLI)
  'org.created',
  'org.plan_changed',
  'member.added',
  'member.removed',
  'member.role_changed',
  'workspace.created',
  // Webhooks (issue 17)
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.failing',
  'webhook.secret_rotated',
  'webhook.tested',
  'webhook.delivery_retried',
  // Other operator CLI actions
  'session.issued',
  'usage.recorded',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export function isAuditAction(value: unknown): value is AuditAction {
  return typeof value === 'string' && (AUDIT_ACTIONS as readonly string[]).includes(value);
}
