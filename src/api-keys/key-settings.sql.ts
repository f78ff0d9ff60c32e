/** The per-key settings of an api_keys row aliased `k`, as ApiKeyEntity names them. */
export const KEY_SETTINGS_COLUMNS = `k.enabled, k.rate_limits AS "rateLimits", k.credits_remaining AS "creditsRemaining", k.credits_refill AS "creditsRefill",
  k.credits_period AS "creditsPeriod", k.credits_epoch AS "creditsEpoch", k.allowed_cidrs AS "allowedCidrs", k.metadata`;

/** A key's settings at mint, named as api_keys' columns (read by jsonb_populate_record); absent: the column's default. */
export interface MintSettings {
  enabled?: boolean;
  rate_limits?: unknown[];
  credits_remaining?: number;
  credits_refill?: unknown;
  credits_period?: string | null;
  allowed_cidrs?: string[];
  metadata?: Record<string, unknown>;
}

/** The settings columns of the mint's INSERT, and their values from a populated api_keys record `r`. */
export const MINT_SETTINGS_COLUMNS =
  'enabled, rate_limits, credits_remaining, credits_refill, credits_period, allowed_cidrs, metadata';
export const mintSettingsValues = (r: string) =>
  `COALESCE(${r}.enabled, true), ${r}.rate_limits, ${r}.credits_remaining, ${r}.credits_refill, ${r}.credits_period, ${r}.allowed_cidrs, ${r}.metadata`;

/** The exact mint path's settings, in its transaction after its INSERT: key $1, settings $2 (MintSettings as JSON). */
export const MINT_SETTINGS_SQL = `UPDATE api_keys k SET (${MINT_SETTINGS_COLUMNS}) = (SELECT ${mintSettingsValues('s')})
    FROM jsonb_populate_record(NULL::api_keys, $2::jsonb) s WHERE k.id = $1::uuid`;

/** What a PATCH sets; undefined: unchanged; null: cleared. */
export interface KeySettingsChange {
  name?: string;
  enabled?: boolean;
  rateLimits?: unknown[] | null;
  credits?: { remaining: number; refill?: unknown; period: Date | null } | null;
  allowedCidrs?: string[] | null;
  metadata?: Record<string, unknown> | null;
  /** Narrowed scopes (KeyChanges.update has checked them against the locked row). */
  scopes?: string[];
}

/**
 * The settings UPDATE of one key ($1) in a scope ($2: its owner, or its org for an admin): only the
 * columns the change names. A new credits setting (or its removal) moves `credits_epoch`, so credits
 * that instances leased before it are neither spent nor given back after it.
 */
export function updateSettingsSql(
  scope: 'user_id' | 'org_id' | 'id',
  change: KeySettingsChange,
  returning: string,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const sets: string[] = [];
  const set = (column: string, value: unknown, cast: string) => {
    values.push(value);
    sets.push(`${column} = $${values.length + 2}::${cast}`);
  };
  if (change.name !== undefined) set('name', change.name, 'text');
  if (change.enabled !== undefined) set('enabled', change.enabled, 'boolean');
  if (change.rateLimits !== undefined)
    set('rate_limits', change.rateLimits === null ? null : JSON.stringify(change.rateLimits), 'jsonb');
  if (change.credits !== undefined) {
    const c = change.credits;
    set('credits_remaining', c?.remaining ?? null, 'bigint');
    set('credits_refill', c?.refill ? JSON.stringify(c.refill) : null, 'jsonb');
    set('credits_period', c?.period ?? null, 'timestamptz');
    sets.push('credits_epoch = k.credits_epoch + 1');
  }
  if (change.allowedCidrs !== undefined) set('allowed_cidrs', change.allowedCidrs, 'text[]');
  if (change.scopes !== undefined) set('scopes', change.scopes, 'text[]');
  if (change.metadata !== undefined)
    set('metadata', change.metadata === null ? null : JSON.stringify(change.metadata), 'jsonb');
  return {
    text: `UPDATE api_keys k SET ${sets.join(', ')} WHERE k.id = $1::uuid AND k.${scope} = $2::uuid RETURNING ${returning}`,
    values,
  };
}
