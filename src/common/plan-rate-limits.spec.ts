import { describe, expect, it } from 'vitest';
import { DEFAULT_PLAN_RATE_LIMITS, parsePlanRateLimits } from './plan-rate-limits.js';

describe('PLAN_RATE_LIMITS', () => {
  it('has no default windows, and reads a plan’s windows', () => {
    expect(DEFAULT_PLAN_RATE_LIMITS).toEqual({ free: null, pro: null });
    expect(parsePlanRateLimits({ free: [{ name: 'default', limit: 10, window_seconds: 1 }] })).toEqual({
      free: [{ name: 'default', limit: 10, window_seconds: 1 }],
      pro: null,
    });
  });

  it('refuses what is not a window, naming the path', () => {
    expect(() => parsePlanRateLimits([])).toThrow(/must be a JSON object/);
    expect(() => parsePlanRateLimits({ gold: [] })).toThrow(/unknown plan "gold"/);
    expect(() => parsePlanRateLimits({ free: [{ name: 'default', limit: 0, window_seconds: 1 }] })).toThrow(
      'PLAN_RATE_LIMITS.free[0].limit must be an integer from 1 to 1000000000',
    );
    expect(() => parsePlanRateLimits({ pro: [{ name: 'default', limit: 1, window_seconds: 86_401 }] })).toThrow(
      /PLAN_RATE_LIMITS\.pro\[0\]\.window_seconds/,
    );
  });
});
