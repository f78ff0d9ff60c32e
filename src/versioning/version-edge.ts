import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { SessionOrgResolver } from '../auth/session-org.resolver.js';
import { utcDay, type Clock } from '../common/clock.js';
import { Settings } from '../settings/settings.js';
import { resolvePinned, type ResolvedVersion } from './api-versions.js';
import { DeprecationUsage } from './deprecation-usage.js';
import { deprecationHeaders, goneMessage, type Deprecation } from './deprecations.js';
import { OrgVersionCache } from './org-version.cache.js';
import { changesAfter, type JsonObject, type OperationChange, type RequestInput } from './version-changes.js';
import { VersioningPolicy } from './versioning-policy.js';

/** Where the interceptor of a touched operation leaves the version it decided, for the server's onSend hook. */
export const SERVED_VERSION = Symbol('servedApiVersion');

export interface EdgeRequest {
  headers: Record<string, string | string[] | undefined>;
  query?: unknown;
  body?: unknown;
  user?: Principal;
  [SERVED_VERSION]?: ResolvedVersion;
}
export interface EdgeReply {
  statusCode: number;
  header(name: string, value: string): unknown;
}

type RequestUpgrade = (input: RequestInput) => RequestInput;

/** What one operation a version change or a deprecation touches needs, worked out once at start. */
export interface OperationPlan {
  operationId: string;
  /** version → the operation's changes to apply to an answer, newest first; absent: nothing to convert. */
  changes: ReadonlyMap<string, OperationChange[]>;
  /** version → the request transforms that bring a request forward, oldest first; absent: nothing to convert. */
  upgrades: ReadonlyMap<string, RequestUpgrade[]>;
  deprecations: readonly Deprecation[];
}

const EPOCH = new Date(0);

/**
 * The decisions of versioning, for the interceptor bound to the operations a change touches
 * (operation-versioning.ts) and the standalone server's Fastify hooks. Decides a request's version
 * (the header, else the pin of the principal's org, else the oldest supported), brings an older
 * request forward and converts the answer back, stamps `Api-Version` (and the deprecation headers
 * of a deprecated version), and marks (or, past the sunset, refuses) deprecated uses.
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
    if (user?.kind === 'session' && plan && plan.changes.size > 0)
      return this.sessionOrgPin(user).then((pin) => resolvePinned(table, pin, now));
    return resolvePinned(table, null, now);
  }

  /** The version an answer gets when the org's pin cannot be read (the database is down): the answer keeps its status. */
  unreadable(now: Date): ResolvedVersion {
    return this.policy.table.served(this.policy.table.oldestSupported(now));
  }

  /** Stamps `Api-Version`, the `Warning` of a pin that is no longer served, and a deprecated version's notice. */
  stamp(resolved: ResolvedVersion, request: EdgeRequest, reply: EdgeReply, now: Date): void {
    // Lower case, as the reply stores the name: a name with capitals is lower-cased on every call.
    reply.header('api-version', resolved.version);
    if (resolved.warning) reply.header('warning', resolved.warning);
    const deprecated = this.policy.table.deprecations.get(resolved.version);
    if (deprecated) this.deprecated(deprecated, 'version', request, reply, resolved.version, now);
  }

  /** The plan of an operation, or null when no change and no deprecation touches it. */
  planOf(operationId: string): OperationPlan | null {
    const changes = new Map<string, OperationChange[]>();
    const upgrades = new Map<string, RequestUpgrade[]>();
    for (const version of this.policy.table.versions) {
      const applying = changesAfter(this.policy.changes, version.date).flatMap((c) =>
        c.operations[operationId] ? [c.operations[operationId]] : [],
      );
      if (applying.length > 0) changes.set(version.date, applying);
      const forward = applying.flatMap((c) => (c.request ? [c.request] : [])).reverse();
      if (forward.length > 0) upgrades.set(version.date, forward);
    }
    const deprecations = this.policy.forOperation(operationId);
    return changes.size > 0 || deprecations.length > 0 ? { operationId, changes, upgrades, deprecations } : null;
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

  /** The deprecation notices of an answer of a deprecated operation (or one using a deprecated parameter), and the use counted. */
  notices(plan: OperationPlan, resolved: ResolvedVersion, request: EdgeRequest, reply: EdgeReply, now: Date): void {
    for (const d of plan.deprecations) {
      const parameter = this.usedParameter(d, request);
      if (parameter === false) continue;
      this.deprecated(
        d,
        parameter ? `${plan.operationId}?${parameter}` : plan.operationId,
        request,
        reply,
        resolved.version,
        now,
      );
    }
  }

  /**
   * Brings a request served with an older version forward to the newest shape (body and query,
   * replaced on the request before the route's pipes read them). Nothing is done for the newest.
   */
  upgrade(plan: OperationPlan, resolved: ResolvedVersion, request: EdgeRequest): void {
    const steps = plan.upgrades.get(resolved.version);
    if (!steps) return;
    let input = { body: request.body, query: { ...(request.query as Record<string, unknown> | undefined) } };
    for (const step of steps) input = step(input);
    // Defined rather than assigned: Express serves `query` from a getter of its request prototype.
    for (const [key, value] of [
      ['body', input.body],
      ['query', input.query],
    ] as const) {
      Object.defineProperty(request, key, { value, writable: true, configurable: true, enumerable: true });
    }
  }

  /** A handler's answer (a JSON object, before serialisation) in the shape of the version it is served with. */
  downgrade(plan: OperationPlan, resolved: ResolvedVersion, body: unknown): unknown {
    const changes = plan.changes.get(resolved.version);
    if (!changes || !body || typeof body !== 'object' || Array.isArray(body)) return body;
    let out = body as JsonObject;
    for (const change of changes) if (change.response) out = change.response(out);
    return out;
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
    const pin = this.pins.cached(probe.orgId);
    return pin !== undefined ? pin : this.pins.load(probe.orgId);
  }

  private deprecated(
    d: Deprecation,
    target: string,
    request: EdgeRequest,
    reply: EdgeReply,
    version: string,
    now: Date,
  ): void {
    for (const [name, value] of Object.entries(deprecationHeaders(d))) reply.header(name, value);
    this.usage.record({ orgId: request.user?.orgId ?? null, target, version }, utcDay(now));
  }
}
