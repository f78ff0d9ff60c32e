/** Injectable time source, so day rollover and expiry can be tested without waiting. */
export abstract class Clock {
  abstract now(): Date;
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}

/** The last day `utcDay` formatted and the instants it spans: charges ask for it on every request. */
let lastDay = { from: 0, to: 0, day: '' };

/** The UTC calendar day of an instant, as `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  const t = at.getTime();
  if (t >= lastDay.from && t < lastDay.to) return lastDay.day;
  const day = at.toISOString().slice(0, 10);
  const from = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  // Years outside toISOString's 4-digit form (±YYYYYY) are formatted each time, never cached.
  if (day.length === 10 && day[4] === '-') lastDay = { from, to: from + 86_400_000, day };
  return day;
}

/** The next UTC midnight strictly after `at`. */
export function nextUtcMidnight(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1));
}

/** Milliseconds since the epoch; for the system clock without a Date (paths that run per request). */
export function epochMs(clock: Clock): number {
  return clock instanceof SystemClock ? Date.now() : clock.now().getTime();
}
