import { BadRequestException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { isCalendarDay, oldestKeptDay, resolveDayRange } from './day-range.js';

const TODAY = '2026-11-23';
const check = (query: { from?: unknown; to?: unknown }, retention = 400) => resolveDayRange(query, TODAY, retention);
const message = (query: { from?: unknown; to?: unknown }, retention = 400) => {
  try {
    check(query, retention);
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestException);
    return (error as Error).message;
  }
  throw new Error('no 400');
};

describe('resolveDayRange', () => {
  it('defaults to the 30 days up to today', () => {
    expect(check({})).toEqual({ from: '2026-10-25', to: TODAY });
  });

  it('accepts exactly 92 days and refuses 93, naming to', () => {
    expect(check({ from: '2026-08-24', to: TODAY })).toEqual({ from: '2026-08-24', to: TODAY });
    expect(message({ from: '2026-08-23', to: TODAY })).toBe(
      'to must be at most 91 days after from (at most 92 days per request)',
    );
  });

  it.each([
    [{ from: '2026-11-1' }, 'from must be a date in the form YYYY-MM-DD (a UTC day)'],
    [{ from: '2026-02-30' }, 'from must be a date in the form YYYY-MM-DD (a UTC day)'],
    [{ to: 'yesterday' }, 'to must be a date in the form YYYY-MM-DD (a UTC day)'],
    [{ to: ['2026-11-01', '2026-11-02'] }, 'to must be a date in the form YYYY-MM-DD (a UTC day)'],
    [{ from: '2026-11-10', to: '2026-11-09' }, 'from must not be after to'],
    [{ to: '2026-11-24' }, 'to must not be after today (2026-11-23, UTC)'],
  ])('refuses %j with a 400 naming the parameter', (query, text) => {
    expect(message(query)).toBe(text);
  });

  it('refuses a from before the retention window, naming from, and clamps a defaulted one', () => {
    expect(oldestKeptDay(TODAY, 10)).toBe('2026-11-14');
    expect(message({ from: '2026-11-13' }, 10)).toBe(
      'from must not be before 2026-11-14: usage history is kept for 10 days',
    );
    expect(check({}, 10)).toEqual({ from: '2026-11-14', to: TODAY });
    expect(message({ to: '2026-11-01' }, 10)).toBe(
      'to must not be before 2026-11-14: usage history is kept for 10 days',
    );
  });

  it('has no cap when asked for none (the streamed export)', () => {
    expect(resolveDayRange({ from: '2026-01-01' }, TODAY, 400, null)).toEqual({ from: '2026-01-01', to: TODAY });
  });

  it('knows calendar days', () => {
    expect(['2024-02-29', '2026-12-31'].every(isCalendarDay)).toBe(true);
    expect(['2026-02-29', '2026-13-01', ' 2026-01-01', 20260101].some(isCalendarDay)).toBe(false);
  });
});
