import { describe, expect, it } from 'vitest';
import { keyBadge, maskedKey, stateOf, type KeyRecord } from './key-view.js';
import { keyRecord } from '../test/page.js';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const key = (over: Partial<KeyRecord> = {}): KeyRecord => keyRecord({ id: 'k1', org_id: 'o1', name: 'ci', ...over });

describe('how a key reads', () => {
  it('takes its state from the answer when the answer carries one', () => {
    // The service said expired (say, by a clock the page does not share): the page does not second-guess it.
    expect(stateOf(key({ state: 'expired', expires_at: '2027-01-01T00:00:00Z' }))).toBe('expired');
    expect(stateOf(key({ state: 'pending' }))).toBe('pending');
    expect(keyBadge(key({ state: 'revoked' }), NOW)).toMatchObject({ variant: 'revoked', text: 'Revoked' });
    expect(keyBadge(key({ state: 'disabled' }), NOW)).toMatchObject({ text: 'Disabled' });
  });

  it('shows how soon an active key expires, its rotation grace, or that it never expires', () => {
    expect(keyBadge(key({ state: 'active', expires_at: '2027-02-25T12:00:00Z' }), NOW)).toMatchObject({
      variant: 'active',
      text: 'Expires in 90 days',
    });
    expect(keyBadge(key({ state: 'active', expires_at: '2026-11-30T12:00:00Z' }), NOW)).toMatchObject({
      variant: 'expiring',
      text: 'Expires in 3 days',
    });
    expect(keyBadge(key({ state: 'active', previous_secret_expires_at: '2026-11-28T00:00:00Z' }), NOW)).toMatchObject({
      variant: 'grace',
      text: 'In grace',
    });
    expect(keyBadge(key({ state: 'active' }), NOW)).toMatchObject({ variant: 'active', text: 'Active' });
  });

  it('masks the key as svc_live_<lookup>…<last4>', () => {
    expect(maskedKey(key())).toBe('svc_live_AbCdEfGhIjKl…Zz9Q');
  });
});
