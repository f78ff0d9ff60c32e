/** The per-key settings of an api_keys row aliased `k`, as ApiKeyEntity names them. */
export const KEY_SETTINGS_COLUMNS = `k.enabled, k.rate_limits AS "rateLimits", k.credits_remaining AS "creditsRemaining", k.credits_refill AS "creditsRefill",
  k.credits_period AS "creditsPeriod", k.credits_epoch AS "creditsEpoch", k.allowed_cidrs AS "allowedCidrs", k.metadata`;

/** What a PATCH sets; undefined: unchanged; null: cleared. */
export interface KeySettingsChange {
  name?: string;
  enabled?: boolean;
  rateLimits?: unknown[] | null;
  credits?: { remaining: number; refill?: unknown; period: Date | null } | null;
  allowedCidrs?: string[] | null;
  metadata?: Record<string, unknown> | null;
}

/**
 * The settings UPDATE of one key ($1) in a scope ($2: its owner, or its org for an admin): only the
 * columns the change names. A new credits setting (or its removal) moves `credits_epoch`, so credits
 * that instances leased before it are neither spent nor given back after it.
 */
export function updateSettingsSql(scope: 'user_id' | 'org_id', change: KeySettingsChange, returning: string): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const sets: string[] = [];
  const set = (column: string, value: unknown, cast: string) => {
    values.push(value);
    sets.push(`${column} = $${values.length + 2}::${cast}`);
  };
  if (change.name !== undefined) set('name', change.name, 'text');
  if (change.enabled !== undefined) set('enabled', change.enabled, 'boolean');
  if (change.rateLimits !== undefined) set('rate_limits', change.rateLimits === null ? null : JSON.stringify(change.rateLimits), 'jsonb');
  if (change.credits !== undefined) {
    const c = change.credits;
    set('credits_remaining', c?.remaining ?? null, 'bigint');
    set('credits_refill', c?.refill ? JSON.stringify(c.refill) : null, 'jsonb');
    set('credits_period', c?.period ?? null, 'timestamptz');
    sets.push('credits_epoch = k.credits_epoch + 1');
  }
  if (change.allowedCidrs !== undefined) set('allowed_cidrs', change.allowedCidrs, 'text[]');
  if (change.metadata !== undefined) set('metadata', change.metadata === null ? null : JSON.stringify(change.metadata), 'jsonb');
  return { text: `UPDATE api_keys k SET ${sets.join(', ')} WHERE k.id = $1::uuid AND k.${scope} = $2::uuid RETURNING ${returning}`, values };
}
