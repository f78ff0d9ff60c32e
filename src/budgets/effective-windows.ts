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
 * A key's windows and its plan's together: the plan's always apply, in addition to the key's own
 * (a key cannot shed them with `rate_limits: []` or a larger window of its own). Built once per
 * (own windows, plan windows) pair and per route window name, and cached on those arrays, which
 * the verified row and the settings hold: a request allocates nothing.
 */
export class EffectiveWindows {
  private readonly byPair = new WeakMap<
    readonly RateWindow[],
    WeakMap<readonly RateWindow[], Map<string, readonly EffectiveWindow[]>>
  >();
  /** A key's own windows with no plan windows (the common case): one lookup fewer per request. */
  private readonly byOwn = new WeakMap<readonly RateWindow[], Map<string, readonly EffectiveWindow[]>>();

  /** The windows the route named `route` counts against. */
  of(
    own: readonly RateWindow[] | null,
    planned: readonly RateWindow[] | null,
    route: string,
  ): readonly EffectiveWindow[] {
    const o = own ?? NONE;
    const p = planned ?? NONE;
    if (o.length === 0 && p.length === 0) return EMPTY;
    let byRoute: Map<string, readonly EffectiveWindow[]> | undefined;
    if (p === NONE) {
      byRoute = this.byOwn.get(o);
      if (!byRoute) this.byOwn.set(o, (byRoute = new Map<string, readonly EffectiveWindow[]>()));
    } else {
      let byPlan = this.byPair.get(o);
      if (!byPlan) this.byPair.set(o, (byPlan = new WeakMap()));
      byRoute = byPlan.get(p);
      if (!byRoute) byPlan.set(p, (byRoute = new Map<string, readonly EffectiveWindow[]>()));
    }
    let windows = byRoute.get(route);
    if (!windows) byRoute.set(route, (windows = combine(o, p, route)));
    return windows;
  }
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
