import { isDeepStrictEqual } from 'node:util';
import { cidrWithin, type CreditRefill, type RateWindow } from '../budgets/key-settings.js';
import { ERRORS } from '../common/error-messages.js';
import type { ApiKeyEntity } from './api-key.entity.js';
import { creditsBalance } from './api-key.record.js';
import { CONTROLS, type ControlName, type ControlsSetBy, type SetBy } from './controls-set-by.js';
import type { SettingsColumns } from './key-settings.sql.js';

/*
 * Who set each of a key's controls, and what its owner may do with one an org admin set
 * (docs/key-controls.md, "Who set a control"). An org owner or admin (or the operator) may change
 * or lift any control; the key's owner may only narrow one an admin set. A narrowed control stays
 * the admin's: were it the owner's after a narrowing, the owner could lift it in a second PATCH.
 */

/** A key's controls as its row holds them (read under the row's lock before a change). */
export type KeyControls = Pick<
  ApiKeyEntity,
  'enabled' | 'rateLimits' | 'creditsRemaining' | 'creditsRefill' | 'creditsPeriod' | 'allowedCidrs' | 'metadata'
> & { controlsSetBy: ControlsSetBy | null };

/** A control's column in a change: credits are sent as one field and stored in several. */
const COLUMN: Record<ControlName, keyof SettingsColumns> = {
  enabled: 'enabled',
  rate_limits: 'rate_limits',
  credits: 'credits_remaining',
  allowed_cidrs: 'allowed_cidrs',
  metadata: 'metadata',
};

/** The controls a change sends. */
export const controlsIn = (change: SettingsColumns): ControlName[] => CONTROLS.filter((c) => COLUMN[c] in change);

/** A control's value that sets nothing: it is then shown on no record, and nobody set it. */
const unset = (control: ControlName, change: SettingsColumns): boolean =>
  change[COLUMN[control]] === null || (control === 'enabled' && change.enabled === true);

/**
 * Who set each control after `change` by `by`: a control cleared (null, or `enabled: true`) has no
 * one; a control the owner narrows stays the admin's if it was; else it is `by`'s. Null: none set.
 */
export function controlsSetByAfter(
  before: ControlsSetBy | null,
  change: SettingsColumns,
  by: SetBy,
): ControlsSetBy | null {
  const after: ControlsSetBy = { ...before };
  for (const control of controlsIn(change)) {
    if (unset(control, change)) delete after[control];
    else if (by === 'admin' || after[control] !== 'admin') after[control] = by;
  }
  return Object.keys(after).length > 0 ? after : null;
}

/** The 403's message when the key's owner would lift (not narrow) a control an admin set; null when every one narrows or keeps it. */
export function liftedControl(key: KeyControls, change: SettingsColumns, now: Date): string | null {
  for (const control of controlsIn(change)) {
    if (key.controlsSetBy?.[control] !== 'admin') continue;
    const rule = liftOf(control, key, change, now);
    if (rule) return ERRORS.controlSetByAdmin(control, rule);
  }
  return null;
}

function liftOf(control: ControlName, key: KeyControls, change: SettingsColumns, now: Date): string | null {
  switch (control) {
    case 'enabled':
      return enabledLift(key.enabled, change.enabled as boolean);
    case 'rate_limits':
      return rateLimitsLift(key.rateLimits, change.rate_limits as RateWindow[] | null);
    case 'credits': {
      const remaining = change.credits_remaining as number | null;
      const refill = (change.credits_refill ?? null) as CreditRefill | null;
      return creditsLift(
        creditsBalance(key, now),
        key.creditsRefill,
        remaining === null ? null : { remaining, refill },
      );
    }
    case 'allowed_cidrs':
      return allowedCidrsLift(key.allowedCidrs, change.allowed_cidrs as string[] | null);
    case 'metadata':
      return metadataLift(key.metadata, change.metadata as Record<string, unknown> | null);
  }
}

/** Disabling narrows; enabling a key an admin disabled lifts. */
export function enabledLift(before: boolean, after: boolean): string | null {
  return !before && after ? 'a key an org admin disabled is enabled again only by an org owner or admin' : null;
}

/**
 * Narrower windows: every window set stays (same name and window_seconds) with a limit no higher;
 * windows may be added (each applies in addition). Null or a window left out lifts.
 */
export function rateLimitsLift(before: RateWindow[] | null, after: RateWindow[] | null): string | null {
  for (const w of before ?? []) {
    const keep = `keep the window "${w.name}" of ${w.window_seconds} seconds with a limit of at most ${w.limit}`;
    const i = (after ?? []).findIndex((a) => a.name === w.name);
    if (after === null || i < 0 || after[i].window_seconds !== w.window_seconds) return `rate_limits must ${keep}`;
    if (after[i].limit > w.limit) return `rate_limits[${i}].limit may be at most ${w.limit} (the window "${w.name}")`;
  }
  return null;
}

/**
 * Narrower credits: a balance no higher than the one now (as the record shows it), and the refill
 * removed, or kept with the same interval and day_of_month and an amount no higher. Null lifts.
 */
export function creditsLift(
  balance: number | null,
  refill: CreditRefill | null,
  after: { remaining: number; refill: CreditRefill | null } | null,
): string | null {
  if (balance === null) return null;
  if (after === null) return 'credits may not be removed';
  if (after.remaining > balance) return `credits.remaining may be at most ${balance} (the balance now)`;
  const r = after.refill;
  if (r === null) return null;
  const same =
    refill !== null &&
    r.interval === refill.interval &&
    (r.day_of_month ?? 1) === (refill.day_of_month ?? 1) &&
    r.amount <= refill.amount;
  if (same) return null;
  return refill === null
    ? 'credits.refill may not be added'
    : `credits.refill may only be removed, or keep its interval (${refill.interval}${refill.interval === 'monthly' ? `, day_of_month ${refill.day_of_month ?? 1}` : ''}) with an amount of at most ${refill.amount}`;
}

/** Narrower networks: each one sent lies within a network set ([] allows none). Null lifts. */
export function allowedCidrsLift(before: string[] | null, after: string[] | null): string | null {
  if (before === null) return null;
  if (after === null) return 'allowed_cidrs may not be removed (that would allow every address)';
  const i = after.findIndex((cidr) => !before.some((outer) => cidrWithin(cidr, outer)));
  return i < 0
    ? null
    : `allowed_cidrs[${i}] (${after[i]}) is not within the networks set: ${before.join(', ') || 'none'}`;
}

/** Metadata has no order to narrow in (only host code knows what it means): any change lifts. */
export function metadataLift(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): string | null {
  if (before === null || isDeepStrictEqual(before, after)) return null;
  return 'metadata may not be changed: nothing in it can be narrowed';
}
