import { describe, expect, it } from 'vitest';
import { KEY_STATES, keyStateOf } from './key-state.js';

const NOW = new Date('2030-01-01T00:00:00Z');
const PAST = new Date('2029-12-31T00:00:00Z');
const key = { approval: null, revokedAt: null, expiresAt: null, enabled: true } as const;

describe('keyStateOf, the key-state rule for a key in memory', () => {
  it('says each of the published states, in the rule’s order of precedence', () => {
    const states = [
      keyStateOf({ ...key, approval: 'denied', revokedAt: PAST }, NOW),
      keyStateOf({ ...key, approval: 'pending', revokedAt: PAST }, NOW),
      keyStateOf({ ...key, approval: 'pending', expiresAt: PAST }, NOW),
      keyStateOf({ ...key, expiresAt: PAST, enabled: false }, NOW),
      keyStateOf({ ...key, enabled: false }, NOW),
      keyStateOf(key, NOW),
    ];
    expect(states).toEqual(['denied', 'revoked', 'pending', 'expired', 'disabled', 'active']);
    expect([...states].sort()).toEqual([...KEY_STATES].sort());
  });

  it('counts a key as expired from its expiry instant on', () => {
    expect(keyStateOf({ ...key, expiresAt: NOW }, NOW)).toBe('expired');
    expect(keyStateOf({ ...key, expiresAt: new Date(NOW.getTime() + 1) }, NOW)).toBe('active');
  });
});
