import type { OpenAPIObject } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { ResolvedVersion } from '../versioning/api-versions.js';
import { SERVED_VERSION, type EdgeRequest, type OperationPlan, type VersionEdge } from '../versioning/version-edge.js';
import { reasonPhrase } from './reason-phrase.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** The step of the server's onSend hook that stamps the version (and deprecation notices) on every answer. */
export type VersionedAnswer = (
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (err: Error | null, payload?: unknown) => void,
) => void;

/** What a versioned route carries in its Fastify config: read by the onSend hook with one property read. */
interface VersionedConfig {
  versioning?: OperationPlan;
}

/** `METHOD /fastify/:path` → operationId, from an OpenAPI document of the app's routes. */
export function operationIdsByRoute(document: OpenAPIObject): Map<string, string> {
  const routes = new Map<string, string>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const id = item[method]?.operationId;
      if (id) routes.set(`${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`, id);
    }
  }
  return routes;
}

/**
 * Every operation a version change or a deprecation names must be one of the app's routes: a
 * renamed operationId would otherwise silently stop converting its older answers. Fails at start.
 */
export function assertVersionedOperationsExist(edge: VersionEdge, operationIds: Iterable<string>): void {
  const known = new Set(operationIds);
  const named = [
    ...edge.policy.changes.flatMap((c) => Object.keys(c.operations)),
    ...edge.policy.deprecations.flatMap((d) => ('operationId' in d.target ? [d.target.operationId] : [])),
  ];
  const missing = [...new Set(named.filter((id) => !known.has(id)))];
  if (missing.length > 0)
    throw new Error(
      `API versioning names operations no route has (src/versioning/version-changes.ts, deprecations.ts): ${missing.join(', ')}`,
    );
}

function refuse(reply: FastifyReply, status: number, message: string): void {
  void reply
    .code(status)
    .header('Content-Type', 'application/json; charset=utf-8')
    .send(JSON.stringify({ statusCode: status, error: reasonPhrase(status), message }));
}

/**
 * What every answer of the standalone server needs, on the Fastify server below Nest, so a route
 * no version change or deprecation touches pays one header read before and a few after:
 * - onRequest: an `Api-Version` header that is not served is a 400 (work only when it is sent);
 * - the routes a change or deprecation touches (matched by operationId when Fastify adds them)
 *   carry their plan in their config, and a deprecated one a preHandler that answers 410 past its sunset;
 * - the returned onSend step stamps the served version on every answer (the one the interceptor of
 *   a changed operation decided, when it ran; see operation-versioning.ts, which also converts
 *   the request and the answer) and a deprecated operation's notices. Call it last in the
 *   server's onSend hook (bootstrap.ts), or add it as one.
 * Add before the app's routes are registered (before init).
 */
export function installVersioning(
  fastify: FastifyInstance,
  edge: VersionEdge,
  operationIds: ReadonlyMap<string, string>,
): VersionedAnswer {
  assertVersionedOperationsExist(edge, operationIds.values());
  fastify.addHook('onRequest', (request, reply, done) => {
    if (request.headers['api-version'] === undefined) return done();
    const refusal = edge.refusal(request);
    if (refusal === null) return done();
    refuse(reply, 400, refusal);
  });
  fastify.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const id = methods.map((m) => operationIds.get(`${m} ${route.url}`)).find(Boolean);
    const plan = id ? edge.planOf(id) : null;
    if (!plan) return;
    route.config = { ...route.config, versioning: plan };
    if (plan.deprecations.length === 0) return;
    const gone = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const message = edge.gone(plan, request, edge.now());
      if (message === null) return done();
      refuse(reply, 410, message);
    };
    route.preHandler = [
      ...(Array.isArray(route.preHandler) ? route.preHandler : route.preHandler ? [route.preHandler] : []),
      gone,
    ];
  });
  return (fastifyRequest, reply, payload, done) => {
    const request = fastifyRequest as FastifyRequest & EdgeRequest;
    const now = edge.now();
    const plan = (request.routeOptions?.config as VersionedConfig | undefined)?.versioning;
    const answer = (resolved: ResolvedVersion) => {
      edge.stamp(resolved, request, reply, now);
      if (plan) edge.notices(plan, resolved, request, reply, now);
      done(null, payload);
    };
    // A changed operation's interceptor decided the version already (unless a guard refused first).
    const served = (plan && request[SERVED_VERSION]) || edge.served(request, now);
    if (!(served instanceof Promise)) return answer(served);
    // The pin could not be read (the database is down): the answer keeps its status, with the default version.
    served.then(answer, () => answer(edge.unreadable(now)));
  };
}
