import { BadRequestException, GoneException, Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { from, map, switchMap, type Observable } from 'rxjs';
import type { Principal } from '../auth/principal.js';
import { SessionOrgResolver } from '../auth/session-org.resolver.js';
import { utcDay } from '../common/clock.js';
import { Settings } from '../settings/settings.js';
import { API_VERSION_HEADER, resolvePinned, type ResolvedVersion } from './api-versions.js';
import { DeprecationUsage } from './deprecation-usage.js';
import { deprecationHeaders, goneMessage, type Deprecation } from './deprecations.js';
import { OrgVersionCache } from './org-version.cache.js';
import { changesAfter, type JsonObject, type OperationChange } from './version-changes.js';
import { VersioningPolicy } from './versioning-policy.js';

interface HttpRequest {
  headers: Record<string, string | string[] | undefined>;
  query?: Record<string, unknown>;
  body?: unknown;
  user?: Principal;
}
interface HttpReply {
  header(name: string, value: string): unknown;
}

/** What one route needs at each request, worked out once per handler. */
interface RoutePlan {
  operationId: string | null;
  /** version → the operation's changes to apply, newest first; absent: nothing to convert. */
  changes: Map<string, OperationChange[]>;
  deprecations: Deprecation[];
}

const OPERATION_METADATA = 'swagger/apiOperation';
const EPOCH = new Date(0);

/**
 * The edge of versioning: decides the request's version (header, else the org's pin, else the
 * oldest supported), stamps `Api-Version`, converts request and response bodies of the routes a
 * version change touches, and marks (or, past the sunset, refuses with 410) deprecated uses.
 * Runs after authentication (the org comes from the principal). Routes no change or deprecation
 * touches pay one header read, one cache lookup and one header write.
 */
@Injectable()
export class VersioningInterceptor implements NestInterceptor {
  private readonly plans = new WeakMap<object, RoutePlan>();
  private readonly timeless: boolean;

  constructor(
    @Inject(VersioningPolicy) private readonly policy: VersioningPolicy,
    private readonly pins: OrgVersionCache,
    private readonly usage: DeprecationUsage,
    private readonly settings: Settings,
    private readonly sessionOrgs: SessionOrgResolver,
  ) {
    this.timeless = policy.deprecations.length === 0;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequest>();
    const reply = http.getResponse<HttpReply>();
    const plan = this.planOf(context.getHandler());
    // Nothing deprecated: no version or route ever sunsets, and the time is not needed.
    const now = this.timeless ? EPOCH : this.settings.clock.now();
    const asked = request.headers['api-version'];
    if (asked !== undefined) {
      const date = Array.isArray(asked) ? asked.join(', ') : asked;
      const refusal = this.policy.table.refusal(date, now);
      if (refusal) throw new BadRequestException(this.policy.table.refusalMessage(date, refusal, now));
      return this.serve(this.policy.table.served(date), plan, request, reply, now, next);
    }
    const user = request.user;
    const orgId = user?.orgId ?? null;
    const pin = orgId === null ? null : this.pins.cached(orgId);
    if (orgId !== null && pin === undefined) {
      return from(this.pins.load(orgId)).pipe(switchMap((loaded) => this.serve(resolvePinned(this.policy.table, loaded, now), plan, request, reply, now, next)));
    }
    // A session on a route that resolves no org (key lifecycle): where a version change touches
    // the route, the org the session operates in decides, as for any other route.
    if (orgId === null && user?.kind === 'session' && plan.changes.size > 0) {
      return from(this.sessionOrgPin(user)).pipe(switchMap((loaded) => this.serve(resolvePinned(this.policy.table, loaded, now), plan, request, reply, now, next)));
    }
    return this.serve(resolvePinned(this.policy.table, pin ?? null, now), plan, request, reply, now, next);
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

  private serve(resolved: ResolvedVersion, plan: RoutePlan, request: HttpRequest, reply: HttpReply, now: Date, next: CallHandler): Observable<unknown> {
    const { version } = resolved;
    reply.header(API_VERSION_HEADER, version);
    if (resolved.warning) reply.header('Warning', resolved.warning);
    const versionDeprecation = this.policy.table.deprecations.get(version);
    if (versionDeprecation) this.deprecated(versionDeprecation, 'version', request, reply, version, now);
    for (const d of plan.deprecations) {
      const parameter = 'operationId' in d.target ? d.target.parameter : undefined;
      if (parameter !== undefined && request.query?.[parameter] === undefined) continue;
      const target = parameter ? `${plan.operationId}?${parameter}` : plan.operationId!;
      this.deprecated(d, target, request, reply, version, now);
      if (now.getTime() >= d.sunsetAt.getTime()) {
        throw new GoneException(goneMessage(d, parameter ? `The ${parameter} parameter` : 'This operation'));
      }
    }
    const changes = plan.changes.get(version);
    if (!changes) return next.handle();
    if (request.body && typeof request.body === 'object' && !Array.isArray(request.body)) {
      // Oldest first: a request is brought forward through each change in turn.
      for (let i = changes.length - 1; i >= 0; i--) {
        const up = changes[i].request;
        if (up) request.body = up(request.body as JsonObject);
      }
    }
    return next.handle().pipe(
      map((body: unknown) => {
        if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
        let out = body as JsonObject;
        for (const change of changes) if (change.response) out = change.response(out);
        return out;
      }),
    );
  }

  private deprecated(d: Deprecation, target: string, request: HttpRequest, reply: HttpReply, version: string, now: Date): void {
    for (const [name, value] of Object.entries(deprecationHeaders(d))) reply.header(name, value);
    this.usage.record({ orgId: request.user?.orgId ?? null, target, version }, utcDay(now));
  }

  private planOf(handler: object): RoutePlan {
    let plan = this.plans.get(handler);
    if (!plan) {
      const operation = Reflect.getMetadata(OPERATION_METADATA, handler) as { operationId?: string } | undefined;
      const operationId = operation?.operationId ?? null;
      const changes = new Map<string, OperationChange[]>();
      if (operationId) {
        for (const version of this.policy.table.versions) {
          const applying = changesAfter(this.policy.changes, version.date).flatMap((c) => (c.operations[operationId] ? [c.operations[operationId]] : []));
          if (applying.length > 0) changes.set(version.date, applying);
        }
      }
      plan = { operationId, changes, deprecations: operationId ? this.policy.forOperation(operationId) : [] };
      this.plans.set(handler, plan);
    }
    return plan;
  }
}
