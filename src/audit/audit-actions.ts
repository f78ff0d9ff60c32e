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
  'api_key.scopes_narrowed',
  'api_key.revoked_by_admin',
  'api_key.revoked_as_leaked',
  // Service keys (an org's keys, held by its service account)
  'service_key.minted',
  'service_key.rotated',
  'service_key.revoked',
  // The org's key policy
  'api_key.approved',
  'api_key.denied',
  'api_key.revoked_as_stale',
  'org.key_policy_updated',
  // Orgs and members (today through the operator CLI)
  'org.created',
  'org.plan_changed',
  'org.api_version_changed',
  'member.added',
  'member.removed',
  'member.role_changed',
  'workspace.created',
  // Webhooks
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
  // A person's data (operator CLI or admin API)
  'user.erased',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export function isAuditAction(value: unknown): value is AuditAction {
  return typeof value === 'string' && (AUDIT_ACTIONS as readonly string[]).includes(value);
}
