import { BadRequestException } from '@nestjs/common';
import { ERRORS } from './error-messages.js';

/** Days one history request may span. */
export const MAX_RANGE_DAYS = 92;
/** Days a history request covers when it names neither end. */
export const DEFAULT_RANGE_DAYS = 30;

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

export interface DayRange {
  from: string;
  to: string;
}

/** A `YYYY-MM-DD` string naming a real calendar day (2026-02-30 is not one). */
export function isCalendarDay(value: unknown): value is string {
  if (typeof value !== 'string' || !DAY_RE.test(value)) return false;
  const t = Date.parse(`${value}T00:00:00Z`);
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === value;
}

export const addDays = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
const daysBetween = (a: string, b: string) =>
  Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / DAY_MS);

/** The first day history still holds, `retentionDays` days up to and including today. */
export const oldestKeptDay = (today: string, retentionDays: number) => addDays(today, -(retentionDays - 1));

/**
 * Checks a requested range of UTC days, each rule a 400 naming its parameter. Defaults: `to`
 * today, `from` the 30 days up to `to`. `maxDays` null: no cap (the streamed CLI export).
 */
export function resolveDayRange(
  query: { from?: unknown; to?: unknown },
  today: string,
  retentionDays: number,
  maxDays: number | null = MAX_RANGE_DAYS,
): DayRange {
  for (const name of ['from', 'to'] as const) {
    const v = query[name];
    if (v !== undefined && !isCalendarDay(v)) throw new BadRequestException(ERRORS.dayFormat(name));
  }
  const to = (query.to as string | undefined) ?? today;
  const from = (query.from as string | undefined) ?? addDays(to, -(DEFAULT_RANGE_DAYS - 1));
  if (to > today) throw new BadRequestException(ERRORS.toAfterToday(today));
  if (from > to) throw new BadRequestException(ERRORS.fromAfterTo);
  const oldest = oldestKeptDay(today, retentionDays);
  if (from < oldest) {
    if (query.from === undefined && to >= oldest) return { from: oldest, to };
    const name = query.from === undefined ? 'to' : 'from';
    throw new BadRequestException(ERRORS.beforeRetention(name, oldest, retentionDays));
  }
  if (maxDays !== null && daysBetween(from, to) + 1 > maxDays) {
    throw new BadRequestException(ERRORS.rangeTooLong(maxDays));
  }
  return { from, to };
}
