import { describe, expect, it } from 'vitest';
import { cidrWithin } from '../budgets/key-settings.js';
import {
  allowedCidrsLift,
  controlsSetByAfter,
  creditsLift,
  enabledLift,
  liftedControl,
  metadataLift,
  rateLimitsLift,
  type KeyControls,
} from './control-owners.js';

const NOW = new Date('2030-01-15T12:00:00Z');
const monthly = { amount: 1000, interval: 'monthly' as const, day_of_month: 1 };
const window = (name: string, limit: number, window_seconds = 1) => ({ name, limit, window_seconds });

describe('who may change a control an org admin set', () => {
  describe('enabled', () => {
    it('lets the owner disable a key, and refuses enabling one an admin disabled', () => {
      expect(enabledLift(true, false)).toBeNull();
      expect(enabledLift(false, false)).toBeNull();
      expect(enabledLift(false, true)).toMatch(/enabled again only by an org owner or admin/);
    });
  });

  describe('rate_limits', () => {
    const admin = [window('default', 100), window('burst', 1000, 60)];

    it('narrows with a lower or equal limit on every window, and with windows added', () => {
      expect(rateLimitsLift(admin, [window('default', 50), window('burst', 1000, 60)])).toBeNull();
      expect(rateLimitsLift(admin, [window('burst', 10, 60), window('default', 100), window('extra', 5)])).toBeNull();
      expect(rateLimitsLift([], [window('default', 5)])).toBeNull();
      expect(rateLimitsLift([], [])).toBeNull();
    });

    it('lifts with a higher limit, naming the entry and the limit', () => {
      expect(rateLimitsLift(admin, [window('default', 101), window('burst', 1000, 60)])).toBe(
        'rate_limits[0].limit may be at most 100 (the window "default")',
      );
    });

    it('lifts when a window is left out, its length changes, or the windows are cleared', () => {
      const keep = /^rate_limits must keep the window "default" of 1 seconds with a limit of at most 100$/;
      expect(rateLimitsLift(admin, [window('burst', 1000, 60)])).toMatch(keep);
      expect(rateLimitsLift(admin, [window('default', 100, 2), window('burst', 1000, 60)])).toMatch(keep);
      expect(rateLimitsLift(admin, [])).toMatch(keep);
      expect(rateLimitsLift(admin, null)).toMatch(keep);
    });
  });

  describe('credits', () => {
    it('narrows with a balance at most the one now, and the refill lowered or removed', () => {
      expect(creditsLift(40, null, { remaining: 40, refill: null })).toBeNull();
      expect(creditsLift(40, null, { remaining: 0, refill: null })).toBeNull();
      expect(creditsLift(40, monthly, { remaining: 10, refill: { ...monthly, amount: 500 } })).toBeNull();
      expect(creditsLift(40, monthly, { remaining: 10, refill: null })).toBeNull();
      expect(
        creditsLift(40, { amount: 10, interval: 'daily' }, { remaining: 1, refill: { amount: 10, interval: 'daily' } }),
      ).toBeNull();
    });

    it('lifts with a higher balance, a removal, a larger or added refill, or another refill calendar', () => {
      expect(creditsLift(40, null, { remaining: 41, refill: null })).toBe(
        'credits.remaining may be at most 40 (the balance now)',
      );
      expect(creditsLift(40, null, null)).toBe('credits may not be removed');
      expect(creditsLift(40, null, { remaining: 1, refill: monthly })).toBe('credits.refill may not be added');
      const refill =
        /^credits\.refill may only be removed, or keep its interval \(monthly, day_of_month 1\) with an amount of at most 1000$/;
      expect(creditsLift(40, monthly, { remaining: 1, refill: { ...monthly, amount: 1001 } })).toMatch(refill);
      expect(creditsLift(40, monthly, { remaining: 1, refill: { ...monthly, day_of_month: 2 } })).toMatch(refill);
      expect(creditsLift(40, monthly, { remaining: 1, refill: { amount: 10, interval: 'daily' } })).toMatch(refill);
    });

    it('compares with the balance the record shows: a refill due counts as applied', () => {
      const key: KeyControls = {
        ...noControls,
        creditsRemaining: '3',
        creditsRefill: monthly,
        creditsPeriod: new Date('2029-12-01T00:00:00Z'),
        controlsSetBy: { credits: 'admin' },
      };
      const change = { credits_remaining: 1000, credits_refill: monthly, credits_period: '2030-01-01T00:00:00.000Z' };
      expect(liftedControl(key, change, NOW)).toBeNull();
      expect(liftedControl({ ...key, creditsPeriod: new Date('2030-01-01T00:00:00Z') }, change, NOW)).toMatch(
        /^credits was set by an org admin, so this key's owner may only narrow it: credits\.remaining may be at most 3/,
      );
    });
  });

  describe('allowed_cidrs', () => {
    it('narrows with networks inside those set (and with none at all)', () => {
      expect(
        allowedCidrsLift(['10.0.0.0/8', '2001:db8::/32'], ['10.1.0.0/16', '10.2.3.4', '2001:db8:1::/48']),
      ).toBeNull();
      expect(allowedCidrsLift(['10.0.0.0/8'], ['10.0.0.0/8'])).toBeNull();
      expect(allowedCidrsLift(['10.0.0.0/8'], [])).toBeNull();
      expect(allowedCidrsLift(['0.0.0.0/0'], ['203.0.113.0/24'])).toBeNull();
    });

    it('lifts with a wider or other network, another family, or a removal', () => {
      expect(allowedCidrsLift(['10.1.0.0/16'], ['10.1.0.0/24', '10.0.0.0/8'])).toBe(
        'allowed_cidrs[1] (10.0.0.0/8) is not within the networks set: 10.1.0.0/16',
      );
      expect(allowedCidrsLift(['10.0.0.0/8'], ['11.0.0.0/8'])).toMatch(/^allowed_cidrs\[0\]/);
      expect(allowedCidrsLift(['10.0.0.0/8'], ['::ffff:10.0.0.0/104'])).toMatch(/^allowed_cidrs\[0\]/);
      expect(allowedCidrsLift([], ['10.0.0.0/8'])).toBe(
        'allowed_cidrs[0] (10.0.0.0/8) is not within the networks set: none',
      );
      expect(allowedCidrsLift(['10.0.0.0/8'], null)).toMatch(/may not be removed/);
    });

    it('knows which network lies within which, IPv4 and IPv6', () => {
      expect(cidrWithin('10.255.0.0/16', '10.0.0.0/8')).toBe(true);
      expect(cidrWithin('10.0.0.0/8', '10.0.0.0/16')).toBe(false);
      expect(cidrWithin('2001:db8:ffff::/48', '2001:db8::/32')).toBe(true);
      expect(cidrWithin('2001:db9::/48', '2001:db8::/32')).toBe(false);
      expect(cidrWithin('::/0', '0.0.0.0/0')).toBe(false);
    });
  });

  describe('metadata', () => {
    it('may be sent unchanged (in any key order) but not changed, extended or removed', () => {
      const admin = { tier: 'gold', limits: { a: 1, b: 2 } };
      expect(metadataLift(admin, { limits: { b: 2, a: 1 }, tier: 'gold' })).toBeNull();
      for (const other of [
        { tier: 'silver', limits: { a: 1, b: 2 } },
        { ...admin, extra: true },
        { tier: 'gold' },
        null,
      ])
        expect(metadataLift(admin, other)).toBe('metadata may not be changed: nothing in it can be narrowed');
    });
  });

  describe('liftedControl', () => {
    it('checks only the controls an admin set, and names the control in the message', () => {
      const key: KeyControls = {
        ...noControls,
        enabled: false,
        rateLimits: [window('default', 10)],
        controlsSetBy: { enabled: 'admin', rate_limits: 'owner' },
      };
      expect(liftedControl(key, { rate_limits: null }, NOW)).toBeNull();
      expect(liftedControl(key, { enabled: true }, NOW)).toBe(
        "enabled was set by an org admin, so this key's owner may only narrow it: a key an org admin disabled is enabled again only by an org owner or admin",
      );
      expect(liftedControl({ ...key, controlsSetBy: { rate_limits: 'admin' } }, { rate_limits: null }, NOW)).toMatch(
        /^rate_limits was set by an org admin/,
      );
    });
  });

  describe('controlsSetByAfter', () => {
    it('records who set each control sent, and forgets a control cleared', () => {
      expect(
        controlsSetByAfter(null, { rate_limits: [window('default', 1)], enabled: true, name: 'x' }, 'owner'),
      ).toEqual({
        rate_limits: 'owner',
      });
      expect(
        controlsSetByAfter({ rate_limits: 'owner', metadata: 'admin' }, { rate_limits: null, enabled: false }, 'admin'),
      ).toEqual({
        metadata: 'admin',
        enabled: 'admin',
      });
      expect(controlsSetByAfter({ enabled: 'admin' }, { enabled: true }, 'admin')).toBeNull();
    });

    it('keeps an admin’s control the admin’s when its owner narrows it, and lets an admin take over an owner’s', () => {
      expect(
        controlsSetByAfter(
          { rate_limits: 'admin', credits: 'owner' },
          { rate_limits: [], credits_remaining: 1 },
          'owner',
        ),
      ).toEqual({
        rate_limits: 'admin',
        credits: 'owner',
      });
      expect(controlsSetByAfter({ credits: 'owner' }, { credits_remaining: 5 }, 'admin')).toEqual({ credits: 'admin' });
    });
  });
});

const noControls: KeyControls = {
  enabled: true,
  rateLimits: null,
  creditsRemaining: null,
  creditsRefill: null,
  creditsPeriod: null,
  allowedCidrs: null,
  metadata: null,
  controlsSetBy: null,
};
