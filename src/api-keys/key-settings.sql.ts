import { refillPeriodStart } from '../budgets/key-settings.js';
import type { CreditRefill } from '../common/key-limits.js';
import type { ApiKeyEntity } from './api-key.entity.js';

/*
 * The one mapper between a key's settings (the fields of dto/key-settings.dto.ts) and the
 * api_keys columns that hold them, for the mint's INSERT, the PATCH's UPDATE, the rows read back
 * and the record. A setting stored as is in the column of its own name is declared by its
 * column's entry below (`setting`); it then needs nothing else here.
 */

interface SettingColumn {
  /** The column's SQL type (the UPDATE's cast). */
  type: 'text' | 'boolean' | 'jsonb' | 'bigint' | 'timestamptz' | 'text[]';
  /** ApiKeyEntity's name for it. */
  property: keyof ApiKeyEntity;
  /** A request field of the same name stored as is: how the operator CLI takes it, and its help there. */
  setting?: { flag: 'text' | 'boolean' | 'json'; help: string };
  /** The value a mint leaves when the setting is absent; the record omits the field at it. Absent: null. */
  default?: boolean;
  /** Always on the record (not a setting that may be absent). */
  base?: boolean;
}

export const SETTING_COLUMNS = {
  name: {
    type: 'text',
    property: 'name',
    base: true,
    setting: { flag: 'text', help: 'Its label, at most 100 characters.' },
  },
  enabled: {
    type: 'boolean',
    property: 'enabled',
    default: true,
    setting: { flag: 'boolean', help: 'false: the key answers 401 until enabled again.' },
  },
  rate_limits: {
    type: 'jsonb',
    property: 'rateLimits',
    setting: {
      flag: 'json',
      help: 'Windows, e.g. [{"name":"default","limit":10,"window_seconds":1}]; null clears them.',
    },
  },
  credits_remaining: { type: 'bigint', property: 'creditsRemaining' },
  credits_refill: { type: 'jsonb', property: 'creditsRefill' },
  credits_period: { type: 'timestamptz', property: 'creditsPeriod' },
  allowed_cidrs: {
    type: 'text[]',
    property: 'allowedCidrs',
    setting: { flag: 'json', help: 'e.g. ["203.0.113.0/24"]; null: anywhere.' },
  },
  metadata: {
    type: 'jsonb',
    property: 'metadata',
    setting: { flag: 'json', help: 'A JSON object of at most 1 KB and 4 levels; null clears it.' },
  },
  // Who set each control (control-owners.ts): written with the controls, never sent as a setting.
  controls_set_by: { type: 'jsonb', property: 'controlsSetBy' },
  description: {
    type: 'text',
    property: 'description',
    setting: { flag: 'text', help: 'Free text about the key, at most 500 characters.' },
  },
} as const satisfies Record<string, SettingColumn>;

export type SettingColumnName = keyof typeof SETTING_COLUMNS;
/** Settings as columns: absent, unchanged (PATCH) or the column's default (mint); null: cleared. */
export type SettingsColumns = Partial<Record<SettingColumnName, unknown>>;
/** What a PATCH writes: the settings' columns, and the key's scopes when it narrows them. */
export type SettingsChange = SettingsColumns & { scopes?: string[] };

const COLUMNS = Object.entries(SETTING_COLUMNS) as Array<[SettingColumnName, SettingColumn]>;

/** The settings whose columns are not simply their own: credits (a balance, a refill and its period). */
const DERIVED = {
  credits: {
    help: 'e.g. {"remaining":1000,"refill":{"amount":1000,"interval":"monthly","day_of_month":1}}; null removes credits.',
    columns: (c: { remaining: number; refill?: CreditRefill } | null, now: Date): SettingsColumns => ({
      credits_remaining: c?.remaining ?? null,
      credits_refill: c?.refill ?? null,
      // The balance given belongs to the current refill period: the next refill is at its end.
      credits_period: c?.refill ? refillPeriodStart(c.refill, now).toISOString() : null,
    }),
  },
};

/** Every setting field a mint or PATCH may carry, in order, with how the operator CLI takes it. */
export const SETTING_FIELDS: ReadonlyArray<{ field: string; flag: 'text' | 'boolean' | 'json'; help: string }> = [
  ...COLUMNS.flatMap(([field, c]) => (c.setting ? [{ field, ...c.setting }] : [])),
  ...Object.entries(DERIVED).map(([field, d]) => ({ field, flag: 'json' as const, help: d.help })),
];

/** The settings a body sends (undefined fields absent), as columns. */
export function settingsColumns(body: Record<string, unknown>, now: Date): SettingsColumns {
  const columns: SettingsColumns = {};
  for (const [field, value] of Object.entries(body)) {
    if (value === undefined) continue;
    if (field === 'credits') Object.assign(columns, DERIVED.credits.columns(value as never, now));
    else if ((SETTING_COLUMNS as Record<string, SettingColumn>)[field]?.setting)
      columns[field as SettingColumnName] = value;
  }
  return columns;
}

/** The settings of an api_keys row aliased `k`, as ApiKeyEntity names them. */
export const KEY_SETTINGS_COLUMNS = [
  ...COLUMNS.map(([column, c]) => `k.${column} AS "${c.property}"`),
  'k.credits_epoch AS "creditsEpoch"',
].join(', ');

/** The settings columns of the mint's INSERT (its own columns hold `name`), and their values from a populated api_keys record `r`. */
const INSERTED = COLUMNS.filter(([, c]) => !c.base);
export const MINT_SETTINGS_COLUMNS = INSERTED.map(([column]) => column).join(', ');
export const mintSettingsValues = (r: string) =>
  INSERTED.map(([column, c]) =>
    c.default === undefined ? `${r}.${column}` : `COALESCE(${r}.${column}, ${JSON.stringify(c.default)})`,
  ).join(', ');

/** The exact mint path's settings, in its transaction after its INSERT: key $1, settings $2 (as JSON). */
export const MINT_SETTINGS_SQL = `UPDATE api_keys k SET (${MINT_SETTINGS_COLUMNS}) = (SELECT ${mintSettingsValues('s')})
    FROM jsonb_populate_record(NULL::api_keys, $2::jsonb) s WHERE k.id = $1::uuid`;

/** A minted key's settings as ApiKeyEntity holds them once written (absent: the column's default). */
export function settingsEntity(columns: SettingsColumns = {}): Partial<ApiKeyEntity> {
  const entity: Record<string, unknown> = { creditsEpoch: 0 };
  for (const [column, c] of INSERTED) {
    const value = columns[column] ?? c.default ?? null;
    // As the driver reads them back: a bigint as its decimal string, a timestamptz as a Date.
    if (value !== null && c.type === 'bigint') entity[c.property] = `${value as number}`;
    else if (value !== null && c.type === 'timestamptz') entity[c.property] = new Date(value as string);
    else entity[c.property] = value;
  }
  return entity;
}

/** The plain settings of a key as its record shows them: only those set and not at their default. */
export function settingsRecord(k: ApiKeyEntity): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [column, c] of COLUMNS) {
    const value = k[c.property];
    if (c.setting && !c.base && value !== null && value !== undefined && value !== c.default) record[column] = value;
  }
  return record;
}

/**
 * The settings UPDATE of one key ($1) in a scope ($2: its owner, or its org for an admin): only the
 * columns the change names. A new credits setting (or its removal) moves `credits_epoch`, so credits
 * that instances leased before it are neither spent nor given back after it.
 */
export function updateSettingsSql(
  scope: 'user_id' | 'org_id' | 'id',
  change: SettingsChange,
  returning: string,
): { text: string; values: unknown[] } {
  const { scopes, ...columns } = change;
  const values: unknown[] = [];
  const sets: string[] = [];
  for (const [column, value] of Object.entries(columns) as Array<[SettingColumnName, unknown]>) {
    const { type } = SETTING_COLUMNS[column];
    values.push(type === 'jsonb' && value !== null ? JSON.stringify(value) : value);
    sets.push(`${column} = $${values.length + 2}::${type}`);
  }
  if (scopes !== undefined) {
    // Narrowed scopes (KeyChanges.update has checked them against the locked row).
    values.push(scopes);
    sets.push(`scopes = $${values.length + 2}::text[]`);
  }
  if ('credits_remaining' in columns) sets.push('credits_epoch = k.credits_epoch + 1');
  return {
    text: `UPDATE api_keys k SET ${sets.join(', ')} WHERE k.id = $1::uuid AND k.${scope} = $2::uuid RETURNING ${returning}`,
    values,
  };
}
