import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { SessionOrgResolver } from '../auth/session-org.resolver.js';
import { utcDay, type Clock } from '../common/clock.js';
import { Settings } from '../settings/settings.js';
import { API_VERSION_HEADER, resolvePinned, type ResolvedVersion } from './api-versions.js';
import { DeprecationUsage } from './deprecation-usage.js';
import { deprecationHeaders, goneMessage, type Deprecation } from './deprecations.js';
import { OrgVersionCache } from './org-version.cache.js';
import { changesAfter, type JsonObject, type OperationChange } from './version-changes.js';
import { VersioningPolicy } from './versioning-policy.js';

export interface EdgeRequest {
  headers: Record<string, string | string[] | undefined>;
  query?: unknown;
  user?: Principal;
}
export interface EdgeReply {
  statusCode: number;
  header(name: string, value: string): unknown;
}

/** What one operation a version change or a deprecation touches needs, worked out once at start. */
export interface OperationPlan {
  operationId: string;
  /** version → the operation's changes to apply, newest first; absent: nothing to convert. */
  changes: ReadonlyMap<string, OperationChange[]>;
  deprecations: readonly Deprecation[];
}

const EPOCH = new Date(0);

/**
 * The edge of versioning, for the HTTP server's hooks (no Nest interceptor: its per-request
 * pipeline would cost every route). Decides an answer's version (the header, else the pin of the
 * principal's org, else the oldest supported), stamps `Api-Version` (and the deprecation headers
 * of a deprecated version), and for the few operations a change or a deprecation touches, converts
 * the answer and marks (or, past the sunset, refuses) deprecated uses.
 */
@Injectable()
export class VersionEdge {
  private readonly timeless: boolean;
  private readonly clock: Clock;

  constructor(
    @Inject(VersioningPolicy) readonly policy: VersioningPolicy,
    private readonly pins: OrgVersionCache,
    private readonly usage: DeprecationUsage,
    settings: Settings,
    private readonly sessionOrgs: SessionOrgResolver,
  ) {
    // Nothing deprecated: no version or route ever sunsets, and the time is not needed.
    this.timeless = policy.deprecations.length === 0;
    this.clock = settings.clock;
  }

  now(): Date {
    return this.timeless ? EPOCH : this.clock.now();
  }

  /** Null when the request sent no `Api-Version` or one that is served, else the 400's message. */
  refusal(request: EdgeRequest): string | null {
    const asked = request.headers['api-version'];
    if (asked === undefined) return null;
    const date = Array.isArray(asked) ? asked.join(', ') : asked;
    const now = this.now();
    const refusal = this.policy.table.refusal(date, now);
    return refusal && this.policy.table.refusalMessage(date, refusal, now);
  }

  /**
   * The version an answer is served with. A promise only when the org's pin is not in memory (or,
   * on an operation a change touches, a session names no org and the org it operates in decides).
   */
  served(request: EdgeRequest, now: Date, plan?: OperationPlan): ResolvedVersion | Promise<ResolvedVersion> {
    const table = this.policy.table;
    const asked = request.headers['api-version'];
    if (typeof asked === 'string' && table.refusal(asked, now) === null) return table.served(asked);
    const user = request.user;
    const orgId = user?.orgId ?? null;
    if (orgId !== null) {
      const pin = this.pins.cached(orgId);
      if (pin !== undefined) return resolvePinned(table, pin, now);
      return this.pins.load(orgId).then((loaded) => resolvePinned(table, loaded, now));
    }
    if (user?.kind === 'session' && plan && plan.changes.size > 0) return this.sessionOrgPin(user).then((pin) => resolvePinned(table, pin, now));
    return resolvePinned(table, null, now);
  }

  /** Stamps `Api-Version`, the `Warning` of a pin that is no longer served, and a deprecated version's notice. */
  stamp(resolved: ResolvedVersion, request: EdgeRequest, reply: EdgeReply, now: Date): void {
    reply.header(API_VERSION_HEADER, resolved.version);
    if (resolved.warning) reply.header('Warning', resolved.warning);
    const deprecated = this.policy.table.deprecations.get(resolved.version);
    if (deprecated) this.deprecated(deprecated, 'version', request, reply, resolved.version, now);
  }

  /** The plan of an operation, or null when no change and no deprecation touches it. */
  planOf(operationId: string): OperationPlan | null {
    const changes = new Map<string, OperationChange[]>();
    for (const version of this.policy.table.versions) {
      const applying = changesAfter(this.policy.changes, version.date).flatMap((c) => (c.operations[operationId] ? [c.operations[operationId]] : []));
      if (applying.length > 0) changes.set(version.date, applying);
    }
    const deprecations = this.policy.forOperation(operationId);
    return changes.size > 0 || deprecations.length > 0 ? { operationId, changes, deprecations } : null;
  }

  /** Before the handler of a deprecated operation: the 410's message past a sunset it uses, else null. */
  gone(plan: OperationPlan, request: EdgeRequest, now: Date): string | null {
    for (const d of plan.deprecations) {
      const parameter = this.usedParameter(d, request);
      if (parameter === false || now.getTime() < d.sunsetAt.getTime()) continue;
      return goneMessage(d, parameter ? `The ${parameter} parameter` : 'This operation');
    }
    return null;
  }

  /**
   * The answer of an operation a change or deprecation touches: its deprecation notices, and its
   * JSON body converted to the served version (parsed and written again only when a change applies).
   */
  answer(plan: OperationPlan, resolved: ResolvedVersion, request: EdgeRequest, reply: EdgeReply, payload: unknown, now: Date): unknown {
    for (const d of plan.deprecations) {
      const parameter = this.usedParameter(d, request);
      if (parameter === false) continue;
      this.deprecated(d, parameter ? `${plan.operationId}?${parameter}` : plan.operationId, request, reply, resolved.version, now);
    }
    const changes = plan.changes.get(resolved.version);
    if (!changes || typeof payload !== 'string' || reply.statusCode < 200 || reply.statusCode >= 300) return payload;
    let body: unknown;
    try {
      body = JSON.parse(payload);
    } catch {
      return payload;
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return payload;
    let out = body as JsonObject;
    for (const change of changes) if (change.response) out = change.response(out);
    return JSON.stringify(out);
  }

  /** The parameter a parameter deprecation names (undefined: the whole operation), false when the request does not use it. */
  private usedParameter(d: Deprecation, request: EdgeRequest): string | undefined | false {
    const parameter = 'operationId' in d.target ? d.target.parameter : undefined;
    if (parameter === undefined) return undefined;
    const query = request.query as Record<string, unknown> | undefined;
    return query?.[parameter] === undefined ? false : parameter;
  }

  /**
   * The pin of the org a session operates in, resolved on a copy of its principal: the route's
   * own answers (a 404 for a named org the user is not in, say) stay the route's, never ours.
   */
  private async sessionOrgPin(principal: Principal): Promise<string | null> {
    const probe = { ...principal };
    try {
      await this.sessionOrgs.resolve(probe);
    } catch {
      return null;
    }
    if (probe.orgId === null) return null;
    return this.pins.cached(probe.orgId) ?? this.pins.load(probe.orgId);
  }

  private deprecated(d: Deprecation, target: string, request: EdgeRequest, reply: EdgeReply, version: string, now: Date): void {
    for (const [name, value] of Object.entries(deprecationHeaders(d))) reply.header(name, value);
    this.usage.record({ orgId: request.user?.orgId ?? null, target, version }, utcDay(now));
  }
}
