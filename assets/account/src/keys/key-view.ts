// How a key reads on the page: its state as the service judged it, its badge, its masked form.
import type { ApiKey, OrgApiKey } from '../../../../packages/client/src/types.js';
import { DAY, exactTime } from '../time.js';

/** The service's key states (the OpenAPI `state` enum). */
export type KeyState = OrgApiKey['state'];

/** A key record of any list: the caller's own, the org's, a service key. */
export type KeyRecord = ApiKey & { user_id?: string; owner_email?: string; created_by?: string };

/** Days before its expiry a key's badge turns to the warning colour (a display choice, not a server rule). */
export const EXPIRY_WARNING_DAYS = 7;

/** The key's state, as the service judged it (every record carries `state` on the version the page is pinned to). */
export function stateOf(key: KeyRecord): KeyState {
  return key.state;
}

/** Still the owner's to use: active, or disabled (it keeps its place in the main list, with an Enable button). */
export const isUsable = (state: KeyState): boolean => state === 'active' || state === 'disabled';

export const keyName = (key: { name?: string | null }): string => key.name || 'Untitled key';

export const maskedKey = (key: { lookup: string; last4: string }): string => `svc_live_${key.lookup}…${key.last4}`;

export interface Badge {
  variant: 'active' | 'expiring' | 'expired' | 'revoked' | 'grace';
  text: string;
  title: string;
}

/** The badge a key shows: its state, how soon it expires, or its rotation grace. */
export function keyBadge(key: KeyRecord, now = Date.now()): Badge {
  switch (stateOf(key)) {
    case 'denied':
      return { variant: 'revoked', text: 'Denied', title: 'An admin denied this key: it never verifies' };
    case 'pending':
      return {
        variant: 'expiring',
        text: 'Pending approval',
        title: 'Does not verify until an owner or admin approves it',
      };
    case 'revoked':
      return {
        variant: 'revoked',
        text: 'Revoked',
        title: key.revoked_at ? `Revoked ${exactTime(key.revoked_at)}` : 'Revoked',
      };
    case 'expired':
      return {
        variant: 'expired',
        text: 'Expired',
        title: key.expires_at ? `Expired ${exactTime(key.expires_at)}` : 'Expired',
      };
    case 'disabled':
      return { variant: 'expired', text: 'Disabled', title: 'Refused (401) until enabled again' };
    case 'active':
      break;
  }
  if (key.previous_secret_expires_at && Date.parse(key.previous_secret_expires_at) > now) {
    return {
      variant: 'grace',
      text: 'In grace',
      title: `Rotated: the previous secret works until ${exactTime(key.previous_secret_expires_at)}`,
    };
  }
  if (key.expires_at) {
    const days = Math.ceil((Date.parse(key.expires_at) - now) / (DAY * 1000));
    return {
      variant: days <= EXPIRY_WARNING_DAYS ? 'expiring' : 'active',
      text: days <= 1 ? 'Expires within a day' : `Expires in ${days} days`,
      title: `Expires ${exactTime(key.expires_at)}`,
    };
  }
  return { variant: 'active', text: 'Active', title: 'Verifies requests; never expires' };
}
