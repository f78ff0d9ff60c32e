import type { RateWindow } from '../common/plan-rate-limits.js';

/**
 * A window as enforcement applies it. `name` is its counter (the lease's and the key_rate_windows
 * row's name): a key's own window keeps its name, a plan's window is `plan/<name>` (`/` is not
 * allowed in a window's name, so the two never share a counter). `route` is the window name routes
 * count against (`@RateLimited`), `label` the name the RateLimit fields show, `budget` the name a
 * 429's body gives.
 */
export interface EffectiveWindow extends RateWindow {
  route: string;
  label: string;
  budget: string;
}

const NONE: readonly RateWindow[] = [];
const EMPTY: readonly EffectiveWindow[] = [];

/**
 * A key's windows and its plan's together, for the route whose window name is `route`: the plan's
 * always apply, in addition to the key's own (a key cannot shed them with `rate_limits: []` or a
 * larger window of its own). Built when a key's setting, its plan's windows or the route's window
 * name change, and remembered with the key's leases (WindowLeases.windowsOf): a request of the key
 * allocates nothing.
 */
export function effectiveWindows(
  own: readonly RateWindow[] | null,
  planned: readonly RateWindow[] | null,
  route: string,
): readonly EffectiveWindow[] {
  const o = own ?? NONE;
  const p = planned ?? NONE;
  if (o.length === 0 && p.length === 0) return EMPTY;
  return combine(o, p, route);
}

function combine(
  own: readonly RateWindow[],
  planned: readonly RateWindow[],
  route: string,
): readonly EffectiveWindow[] {
  const mine = own.filter((w) => w.name === route);
  const ownNames = new Set(own.map((w) => w.name));
  return [
    ...mine.map((w) => ({ ...w, route, label: w.name, budget: `key_window:${w.name}` })),
    ...planned
      .filter((w) => w.name === route)
      .map((w) => ({
        name: `plan/${w.name}`,
        limit: w.limit,
        window_seconds: w.window_seconds,
        route,
        // Shown under its own name unless the key has a window of that name too.
        label: ownNames.has(w.name) ? `plan/${w.name}` : w.name,
        budget: `plan_window:${w.name}`,
      })),
  ];
}
