/**
 * The messages of the errors this service answers with, in one place (one catalogue),
 * so that the same refusal reads the same wherever it is raised and a change of wording is one
 * edit. Field validation messages stay beside their DTO rules (class-validator decorators), which
 * name the field and the rule themselves.
 */
export const ERRORS = {
  // Authentication and access
  authRequired: 'Authentication required',
  authRequiredBearer: 'Authentication required: send Authorization: Bearer <token>',
  credentialInvalid: 'The credential is invalid, expired or revoked',
  noCredential: 'No credential',
  sessionRequired: 'This endpoint needs a browser session; API keys cannot mint, list or revoke keys',
  missingScope: (scopes: readonly string[]) => `This credential lacks the required scope: ${scopes.join(', ')}`,
  tooManyFailedAuth: 'Too many failed authentication attempts from this address; retry later',
  orgHeaderNotUuid: 'X-Org-Id must be a UUID',

  // Organisations
  orgNotFound: 'Organisation not found',
  orgAdminRequired: 'Only owners and admins of this organisation may do this',
  noOrgSelected: 'No organisation selected: send the X-Org-Id header',
  noOrgSelectedForSession:
    'No organisation selected for this session: send the X-Org-Id header naming one of your organisations',
  noOrgSelectedForScopes:
    'No organisation selected for this session: send the X-Org-Id header (or an org_id claim) naming one of your organisations',
  listingUnsupported: 'Listing is not available with this deployment’s org directory',

  // API keys
  keysNotConfigured: 'API keys are not configured on this deployment',
  keyNotFound: 'API key not found',
  noWorkspace: 'You have no workspace in this organisation yet: connect a repository first',
  roleCannotGrant: (role: string, above: readonly string[], ceiling: readonly string[]) =>
    `Your role "${role}" in this organisation cannot grant ${above.join(', ')}; it allows at most: ${ceiling.join(', ')}`,
  unregisteredScope: (field: string, bad: unknown, registered: readonly string[]) =>
    `${field} may only contain registered scopes (${registered.length > 20 ? `${registered.slice(0, 20).join(', ')} and ${registered.length - 20} more; GET /scopes lists them` : registered.join(', ')}); ${(JSON.stringify(bad) ?? 'undefined').slice(0, 80)} is not one`,
  keyNeverWidened: (scopes: readonly string[]) =>
    `A key is never widened; mint a new one: this key does not hold ${scopes.join(', ')}`,
  noScopesLeft: 'scopes must name at least one scope the key holds (revoke the key to take every scope away)',
  tooManyActiveKeys: (cap: number) =>
    `You already hold ${cap} active keys in this organisation (the limit, MAX_ACTIVE_KEYS_PER_USER_ORG): revoke one before minting another`,
  tooManyMints: (seconds: number) =>
    `Too many keys minted by this user (MINT_RATE_LIMIT per minute); retry in ${seconds} s`,
  keyRevokedCannotRotate: 'This API key is revoked: it cannot be rotated',
  keyExpiredCannotRotate: 'This API key has expired: it cannot be rotated',
  serviceKeyNotFound: 'Service key not found',
  serviceKeysNeedOwnDirectory:
    'Service keys need the built-in org directory; this deployment reads orgs and members from its host',
  tooManyServiceKeys: (cap: number) =>
    `This organisation already holds ${cap} active service keys (the limit, MAX_ACTIVE_SERVICE_KEYS_PER_ORG): revoke one before minting another`,
  serviceAccountAddressTaken:
    'The service account address of this organisation is held by a person; it cannot hold service keys',

  // The org's key policy
  keyNotPending: 'This API key is not pending approval',
  policyMaxLifetime: (days: number) =>
    `expires_in_days must be from 1 to ${days}: the organisation's key policy (max_lifetime_days) allows keys of at most ${days} days`,
  policyRequiresExpiry:
    "expires_in_days must be given (1 or more): the organisation's key policy (require_expiry) requires keys to expire",
  policyRotationNeedsExpiry:
    "This API key never expires, which the organisation's key policy forbids: mint a new key with an expiry instead",
  policyScopesByRole: (role: string, above: readonly string[], allowed: readonly string[]) =>
    `The organisation's key policy (allowed_scopes_by_role) lets the role "${role}" grant at most: ${allowed.join(', ') || 'nothing'}; not ${above.join(', ')}`,
  policyOwnersOnly: 'Only owners of this organisation may change its key policy',
  policyScopeAboveRole: (role: string, scope: string) =>
    `allowed_scopes_by_role.${role} may not contain ${scope}: the role "${role}" cannot hold it`,

  // Per-key controls
  keyAddressRefused: 'This API key may not be used from this address (allowed_cidrs)',
  keyRateLimited: (window: string) =>
    `This API key's rate limit "${window}" is reached; retry after Retry-After seconds`,
  keyCreditsSpent: "This API key's credits are spent",
  noKeySettings: (fields: readonly string[]) => `Send at least one of ${fields.join(', ')}`,
  controlSetByAdmin: (control: string, rule: string) =>
    `${control} was set by an org admin, so this key's owner may only narrow it: ${rule}`,

  // Usage
  keyUsageAdminsOnly: 'Only owners and admins of the organisation can read its keys’ usage',
  dayFormat: (name: string) => `${name} must be a date in the form YYYY-MM-DD (a UTC day)`,
  fromAfterTo: 'from must not be after to',
  toAfterToday: (today: string) => `to must not be after today (${today}, UTC)`,
  beforeRetention: (name: string, oldest: string, retentionDays: number) =>
    `${name} must not be before ${oldest}: usage history is kept for ${retentionDays} days`,
  rangeTooLong: (maxDays: number) =>
    `to must be at most ${maxDays - 1} days after from (at most ${maxDays} days per request)`,

  // Requests
  bodyNotObject: 'The request body must be a JSON object',
  bodyNotJson: 'The request body is not valid JSON',
  bodyNotUtf8: 'The request body is not valid UTF-8',
  bodyTooDeep: (depth: number) => `The request body nests deeper than ${depth} levels (the limit)`,
  unknownField: (field: string) => `${field} is not an accepted field`,
  notUuid: (name: string) => `${name} must be a UUID`,
  notOurCursor: (parameter: string) => `${parameter} is not a cursor this service returned`,

  // Events, webhooks and leaked keys
  webhookNotFound: 'Webhook not found',
  deliveryNotFound: 'Delivery not found',
  webhooksNotConfigured: 'Webhooks need API_KEY_SECRET (signing secrets are sealed with a key derived from it)',
  queueDown: 'The job queue is not running on this instance; retry shortly',
  deliveryEventGone: 'The event of this delivery is no longer kept (deliveries are kept 7 days)',
  httpsOnly: 'url must be an https URL',
  tooManyWebhooks: (max: number) =>
    `This org already has ${max} webhook endpoints, the most it may have; delete one first`,
  tooManyWebhookSends: (seconds: number) =>
    `Too many webhook test and retry requests for this org; retry in ${seconds} seconds`,
  tooManyReports: 'Too many reports from this address; retry later',
  scanningNotConfigured: 'GitHub secret scanning is not configured on this deployment',
  badGithubSignature: 'The GitHub signature does not verify',
  githubBody: (max: number) => `The body must be an array of at most ${max} objects with string token and type`,

  // A person's data (operator only)
  userNotFound: (id: string) => `no user with id ${id}`,
  erasureNeedsSecret: 'Erasure needs API_KEY_SECRET (the pseudonyms in the audit log are keyed hashes derived from it)',
  adminToken: 'This route requires Authorization: Bearer <ADMIN_API_TOKEN>',

  // Operations
  databaseUnavailable: 'The database is unavailable; retry shortly',
  metricsLoopbackOnly:
    'Metrics are served to loopback only: set METRICS_TOKEN, or METRICS_PORT for a listener of their own',
  metricsNotOnApiPort:
    'In production metrics are not served on this port without METRICS_TOKEN: set METRICS_TOKEN, or METRICS_PORT for a listener of their own (or METRICS_ALLOW_LOOPBACK=true)',
  metricsToken: 'Metrics require Authorization: Bearer <METRICS_TOKEN>',
} as const;
