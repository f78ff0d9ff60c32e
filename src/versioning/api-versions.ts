import type { Deprecation } from './deprecations.js';

/*
 * The dated API versions, oldest first. A version is the date its answers took their shape;
 * the contract's answers are those of CONTRACT_API_VERSION and never change. A version is
 * sunset by a deprecation naming it (deprecations.ts): from its sunset a request asking for it
 * by header gets a 400, and an org still pinned to it is answered with the oldest supported
 * version and a Warning (see resolvePinned).
 */

export const API_VERSION_HEADER = 'Api-Version';
export const CONTRACT_API_VERSION = '2026-11-01';

export interface ApiVersion {
  /** `YYYY-MM-DD`. */
  date: string;
  /** One line for the changelog and the OpenAPI description. */
  summary: string;
}

export const API_VERSIONS: readonly ApiVersion[] = [
  { date: CONTRACT_API_VERSION, summary: 'The contract: the first dated version.' },
  { date: '2026-11-26', summary: 'GET /api-keys always carries next_cursor (null on the last page).' },
  { date: '2026-11-27', summary: 'Every key record carries state; status is gone.' },
];

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Why a requested version cannot be served (the 400's message names the header and the versions). */
export type VersionRefusal = 'malformed' | 'future' | 'too_old' | 'unknown' | 'sunset';

export function isCalendarDate(value: string): boolean {
  if (!DATE.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

/** The version table a deployment serves, with the lookups every request needs precomputed. */
export class VersionTable {
  readonly newest: string;
  readonly first: string;
  private readonly byDate: ReadonlyMap<string, ApiVersion>;
  /** A version's deprecation, when it has one (its sunset ends the version). */
  readonly deprecations: ReadonlyMap<string, Deprecation>;

  constructor(
    readonly versions: readonly ApiVersion[] = API_VERSIONS,
    deprecations: readonly Deprecation[] = [],
  ) {
    if (versions.length === 0) throw new Error('At least one API version is needed');
    this.byDate = new Map(versions.map((v) => [v.date, v]));
    this.deprecations = new Map(
      deprecations.flatMap((d) => ('version' in d.target ? [[d.target.version, d] as const] : [])),
    );
    this.first = versions[0].date;
    this.newest = versions[versions.length - 1].date;
  }

  private readonly resolved = new Map<string, ResolvedVersion>();

  /** The (shared, frozen) answer "served with `date`", so the hot path allocates nothing. */
  served(date: string): ResolvedVersion {
    let r = this.resolved.get(date);
    if (!r) {
      r = Object.freeze({ version: date });
      this.resolved.set(date, r);
    }
    return r;
  }

  has(date: string): boolean {
    return this.byDate.has(date);
  }

  private isSupported(version: ApiVersion, now: Date): boolean {
    if (this.deprecations.size === 0) return true;
    const sunset = this.deprecations.get(version.date)?.sunsetAt;
    return !sunset || now.getTime() < sunset.getTime();
  }

  /** The dates served at `now`, oldest first. */
  supported(now: Date): string[] {
    return this.versions.filter((v) => this.isSupported(v, now)).map((v) => v.date);
  }

  /** The oldest version served at `now` (the newest is never sunset without a successor). */
  oldestSupported(now: Date): string {
    if (this.deprecations.size === 0) return this.first;
    return this.versions.find((v) => this.isSupported(v, now))?.date ?? this.newest;
  }

  /** Null when `date` can be served at `now`, else why not. */
  refusal(date: string, now: Date): VersionRefusal | null {
    // A known version first: the common case reads one map and allocates nothing.
    const version = this.byDate.get(date);
    if (version) return this.isSupported(version, now) ? null : 'sunset';
    if (!isCalendarDate(date)) return 'malformed';
    if (date > this.newest) return 'future';
    if (date < this.first) return 'too_old';
    return 'unknown';
  }

  refusalMessage(date: string, refusal: VersionRefusal, now: Date): string {
    const why = {
      malformed: 'is not a date (YYYY-MM-DD)',
      future: 'is in the future',
      too_old: 'predates the first version',
      unknown: 'is not a version of this API',
      sunset: 'is no longer supported (past its sunset)',
    }[refusal];
    return `${API_VERSION_HEADER} header "${date.slice(0, 40)}" ${why}; versions: ${this.supported(now).join(', ')}`;
  }
}

/** How a request's version was decided. */
export interface ResolvedVersion {
  version: string;
  /** Set when the org's pin could not be served: the notice that goes in the Warning header. */
  warning?: string;
}

/**
 * The version for a request: the header's when it sent one (validated by the caller), else the
 * org's pin, else (no org: unauthenticated routes, a session with no org) the oldest supported
 * version, so a caller that never chose a version keeps the answers it has always had.
 */
export function resolvePinned(table: VersionTable, pinned: string | null, now: Date): ResolvedVersion {
  if (pinned === null) return table.served(table.oldestSupported(now));
  if (table.refusal(pinned, now) === null) return table.served(pinned);
  const version = table.oldestSupported(now);
  return {
    version,
    warning: `299 - "API version ${pinned} is no longer supported; answered with ${version}. Ask your operator to move the org to a supported version."`,
  };
}
