import { describe, expect, it } from 'vitest';
import { nextUtcMidnight, utcDay } from './clock.js';

describe('utcDay', () => {
  it('gives each instant its own UTC day, whatever day it was last asked for', () => {
    const cases: Array<[string, string]> = [
      ['2030-01-15T23:59:59.999Z', '2030-01-15'],
      ['2030-01-16T00:00:00.000Z', '2030-01-16'],
      ['2030-01-15T00:00:00.000Z', '2030-01-15'],
      ['2030-01-14T23:59:59.999Z', '2030-01-14'],
      ['2030-01-16T12:00:00.000Z', '2030-01-16'],
      ['2029-12-31T23:59:59.999Z', '2029-12-31'],
      ['2030-01-16T00:00:00.001Z', '2030-01-16'],
    ];
    // Twice, in order and back again, so that every answer also follows another day's.
    for (const [at, day] of [...cases, ...cases.reverse()]) expect(utcDay(new Date(at)), at).toBe(day);
  });

  it('agrees with toISOString across the day boundaries nextUtcMidnight gives', () => {
    let at = new Date('2030-02-27T10:00:00Z');
    for (let i = 0; i < 5; i++) {
      const midnight = nextUtcMidnight(at);
      expect(utcDay(new Date(midnight.getTime() - 1))).toBe(at.toISOString().slice(0, 10));
      expect(utcDay(midnight)).toBe(midnight.toISOString().slice(0, 10));
      at = midnight;
    }
  });

  it('still refuses an invalid date', () => {
    expect(() => utcDay(new Date(Number.NaN))).toThrow(RangeError);
  });
});
