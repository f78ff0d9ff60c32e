/**
 * The event catalogue (docs/events.md, "Event catalogue"). Payloads carry ids, names, masked
 * identifiers (lookup, last4) and times, never a secret.
 */
export const EVENT_TYPES = [
  'api_key.created',
  'api_key.revoked',
  'api_key.rotated',
  'api_key.updated',
  'api_key.scopes_narrowed',
  'api_key.expiring',
  'api_key.expired',
  'api_key.leaked',
  'api_key.pending',
  'api_key.approved',
  'api_key.denied',
  'api_key.stale_warning',
  'usage.threshold',
  'member.removed',
  'service_key.created',
  'service_key.rotated',
  'service_key.revoked',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Sent by POST /orgs/{org_id}/webhooks/{id}/test only; never subscribed to. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** An event as the change that causes it writes it to the outbox. */
export interface OutboxEvent {
  orgId: string;
  type: EventType;
  data: Record<string, unknown>;
  at: Date;
}

/** A key as events describe it: masked, no hash, nothing that authenticates. */
export interface KeyEventFields {
  id: string;
  orgId: string;
  userId: string;
  name: string;
  lookup: string;
  last4: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export function keyEventData(k: KeyEventFields): Record<string, unknown> {
  return {
    id: k.id,
    org_id: k.orgId,
    user_id: k.userId,
    name: k.name,
    lookup: k.lookup,
    last4: k.last4,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    ...(k.expiresAt ? { expires_at: k.expiresAt.toISOString() } : {}),
    ...(k.revokedAt ? { revoked_at: k.revokedAt.toISOString() } : {}),
  };
}

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The same object as keyEventData, built in SQL from an api_keys row aliased `alias`. */
export function keyEventDataSql(alias: string): string {
  return `jsonb_strip_nulls(jsonb_build_object(
    'id', ${alias}.id, 'org_id', ${alias}.org_id, 'user_id', ${alias}.user_id, 'name', ${alias}.name,
    'lookup', ${alias}.lookup, 'last4', ${alias}.last4, 'scopes', to_jsonb(${alias}.scopes),
    'created_at', ${iso(`${alias}.created_at`)}, 'expires_at', ${iso(`${alias}.expires_at`)},
    'revoked_at', ${iso(`${alias}.revoked_at`)}))`;
}

/**
 * The INSERT of one `type` event per row of `from` (api_keys-shaped, aliased `r`) for a change
 * whose own statement is the only one that knows the key: its data is keyEventDataSql merged
 * with `extraSql`, its time the row's `revoked_at`.
 */
export function keyEventPerRowSql(type: EventType, from: string, extraSql: string): string {
  return `INSERT INTO event_outbox (org_id, type, data, created_at)
          SELECT r.org_id, '${type}', ${keyEventDataSql('r')} || ${extraSql}, r.revoked_at FROM ${from} r`;
}

/** One more statement in the change's transaction: the transactional outbox. */
export const INSERT_OUTBOX_SQL = `INSERT INTO event_outbox (org_id, type, data, created_at) VALUES ($1, $2, $3, $4)`;

export const outboxParams = (e: OutboxEvent): unknown[] => [e.orgId, e.type, JSON.stringify(e.data), e.at];

/** The same INSERT with parameters `$first` to `$first + 3` (outboxParams), one event per row of `from`: for a change and its event in one statement. */
export const outboxInsertSql = (first: number, from: string): string =>
  `INSERT INTO event_outbox (org_id, type, data, created_at) SELECT $${first}::uuid, $${first + 1}::text, $${first + 2}::jsonb, $${first + 3}::timestamptz FROM ${from}`;
