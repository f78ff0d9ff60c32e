/*
 * The arithmetic of a sliding-window counter (docs/key-controls.md, "Across replicas"), as the
 * lease statement (LEASE_WINDOWS_SQL) applies it: a window of `limit` per `ms` counts in fixed
 * windows aligned to multiples of `ms`; at `elapsed` into the fixed window starting at `start`,
 * what is available is `limit - previous * (1 - elapsed / ms) - current`. Instants are
 * milliseconds since the epoch.
 */

/** What is available at `now` to a counter last seen at (`start`, `previous`, `current`), if nothing more is leased. */
export function availableAt(
  limit: number,
  ms: number,
  start: number,
  previous: number,
  current: number,
  now: number,
): number {
  if (now < start + ms) return limit - previous * (1 - Math.max(0, now - start) / ms) - current;
  // The next fixed window: the current count becomes the previous one.
  if (now < start + 2 * ms) return limit - current * (1 - (now - start - ms) / ms);
  return limit;
}

/**
 * The earliest instant at which `cost` is available, if nothing more is leased: later in this
 * fixed window as the previous window's count weighs less, or in the next one as the current
 * count, then previous, does.
 */
export function dueAt(
  limit: number,
  ms: number,
  start: number,
  previous: number,
  current: number,
  cost: number,
): number {
  const room = limit - current - cost;
  if (room >= 0) return previous > 0 ? start + ms * (1 - Math.min(1, room / previous)) : start;
  const next = start + ms;
  return current > 0 ? next + ms * Math.max(0, 1 - (limit - cost) / current) : next;
}

/** The instant from which nothing counted so far weighs on the window any more. */
export function wholeBackAt(ms: number, start: number, previous: number, current: number): number {
  if (current > 0) return start + 2 * ms;
  return previous > 0 ? start + ms : start;
}
