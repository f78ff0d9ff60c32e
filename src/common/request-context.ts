import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';

/** `X-Request-Id`, as a response field name (lower case, as the reply stores it). */
export const REQUEST_ID_FIELD = 'x-request-id';

/** Printable, no spaces or quotes, bounded: safe to echo in a header and to write in a log line. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
/** Anything that looks like one of our credentials (an API key or a JWT). */
const CREDENTIAL = /svc_live_[A-Za-z0-9_]*|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.?[A-Za-z0-9_-]*/g;

/** The route label for requests that matched no route, so unknown URLs cannot blow up label cardinality. */
export const UNMATCHED_ROUTE = '(unmatched)';

/**
 * The service's own id of a request: always a fresh UUID, whatever the caller sends. Audit rows
 * and log lines carry it; a caller's X-Request-Id is kept beside it (clientRequestIdOf), never
 * instead of it, so a caller cannot make its requests look like others' in the audit trail.
 */
export function newRequestId(): string {
  return randomUUID();
}

/**
 * The caller's X-Request-Id when it is sane (printable, bounded, not credential-shaped: it is
 * logged and stored), else null.
 */
export function clientRequestIdOf(headers: IncomingMessage['headers']): string | null {
  const given = headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) && !containsCredential(given) ? given : null;
}

export function containsCredential(text: string): boolean {
  CREDENTIAL.lastIndex = 0;
  return CREDENTIAL.test(text);
}

/** Replaces anything credential-shaped, e.g. a key pasted into a URL path by mistake. */
export function scrubCredentials(text: string): string {
  return text.replace(CREDENTIAL, '[REDACTED]');
}

/**
 * The same replacement in SQL, for text only a statement sees (a key's name in its revoke's audit
 * event). The pattern is a constant with no quote in it, and PostgreSQL's regular expressions
 * read it as JavaScript does.
 */
export function scrubCredentialsSql(expression: string): string {
  return `regexp_replace(${expression}, '${CREDENTIAL.source}', '[REDACTED]', 'g')`;
}

/** The route template (`/api-keys/:keyID`), never the raw URL. */
export function routeOf(request: FastifyRequest | undefined): string {
  return request?.routeOptions?.url ?? UNMATCHED_ROUTE;
}

/** The ids of auth's Principal that logs carry; declared here so common/ imports nothing above it. */
interface PrincipalIds {
  kind: string;
  userId: string;
  orgId: string | null;
  keyId?: string;
}

/** Who made the request, by id only: never the credential. */
export function principalIds(request: FastifyRequest | undefined): Record<string, string> {
  const principal = (request as { user?: PrincipalIds } | undefined)?.user;
  if (!principal) return {};
  const ids: Record<string, string> = { auth: principal.kind, user_id: principal.userId };
  if (principal.orgId) ids.org_id = principal.orgId;
  if (principal.keyId) ids.key_id = principal.keyId;
  return ids;
}

/** The path without its query string, credentials scrubbed. */
export function loggablePath(raw: IncomingMessage): string {
  const url = raw.url ?? '/';
  const q = url.indexOf('?');
  return scrubCredentials(q === -1 ? url : url.slice(0, q));
}

/** Where a request came from, as the audit log records it. */
export interface RequestOrigin {
  clientAddress: string | null;
  userAgent: string | null;
  /** The service's own request id (Fastify's request.id); none where the framework has none. */
  requestId: string | null;
  /** The caller's X-Request-Id, when sane: recorded beside the service's id, never as it. */
  clientRequestId?: string | null;
}

const origins = new AsyncLocalStorage<RequestOrigin>();

/**
 * The origin of the request being handled, when there is one (routes that record audit events
 * enter it with RequestOriginInterceptor; the CLI and background jobs have none).
 */
export function currentRequestOrigin(): RequestOrigin | undefined {
  return origins.getStore();
}

export function runWithRequestOrigin<T>(origin: RequestOrigin, work: () => T): T {
  return origins.run(origin, work);
}

interface OriginRequest {
  ip?: string;
  id?: unknown;
  headers: Record<string, string | string[] | undefined>;
}

const MAX_USER_AGENT = 512;

/**
 * The origin of an HTTP request on Fastify or Express. The request id is the framework's own
 * (Express has none: then no request id); the caller's X-Request-Id only ever goes beside it.
 */
export function requestOriginOf(request: OriginRequest): RequestOrigin {
  const ua = request.headers['user-agent'];
  return {
    clientAddress: request.ip ?? null,
    userAgent: typeof ua === 'string' ? scrubCredentials(ua).slice(0, MAX_USER_AGENT) : null,
    requestId: typeof request.id === 'string' ? request.id : null,
    clientRequestId: clientRequestIdOf(request.headers),
  };
}
