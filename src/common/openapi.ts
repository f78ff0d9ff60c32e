import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse, ApiSchema, type OpenAPIObject } from '@nestjs/swagger';
import { CONTRACT_SCOPES, type ScopeRegistry } from './scope-registry.js';
import { MeterRegistry } from './meter-registry.js';

/*
 * OpenAPI metadata shared by the controllers. Declared explicitly (no swagger CLI plugin), so
 * what the document says is what is written here. These decorators only attach metadata:
 * a host that does not serve OpenAPI is unaffected.
 */

/** The security schemes of the document (see http/openapi.ts). */
export const SESSION_SCHEME = 'session';
export const API_KEY_SCHEME = 'apiKey';

// Named KuiError, not Error, so that it never overwrites a host document's own `Error` schema.
@ApiSchema({ name: 'KuiError', description: "Every error body: Nest's standard shape." })
export class ErrorBody {
  @ApiProperty({ type: 'integer', description: 'The HTTP status code, repeated.', example: 400 })
  statusCode: number;

  @ApiProperty({ description: 'The reason phrase of the status.', example: 'Bad Request' })
  error: string;

  @ApiProperty({
    description: 'What went wrong; for a 400, which field broke which rule.',
    example: 'name must be at most 100 characters',
  })
  message: string;
}

@ApiSchema({ name: 'KuiTooManyRequests', description: 'A 429: the error body, and the budget that is spent.' })
export class TooManyRequestsBody extends ErrorBody {
  @ApiProperty({
    description:
      'The spent budget: `key_window:<name>`, `plan_window:<name>`, `key_credits`, `usage:<meter>`, `auth_failures`, `mints`, `leak_reports` or `webhook_sends`.',
    example: 'key_window:default',
  })
  budget: string;

  @ApiProperty({ type: 'integer', minimum: 1, description: 'Seconds to wait, as in Retry-After.', example: 1 })
  retry_after: number;
}

const HEADERS: Record<
  number,
  Record<string, { description: string; required: boolean; schema: { type: 'string' | 'integer'; minimum?: number } }>
> = {
  401: {
    'WWW-Authenticate': {
      description: 'RFC 6750 challenge: `Bearer`, or `Bearer error="invalid_token"` when a token was sent.',
      required: true,
      schema: { type: 'string' },
    },
  },
  429: {
    'Retry-After': {
      description: 'Seconds to wait before retrying.',
      required: true,
      schema: { type: 'integer', minimum: 0 },
    },
  },
};

/** One documented error response per status, each with the standard error body. */
export function ApiErrors(responses: Record<number, string>): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...Object.entries(responses).map(([status, description]) =>
      ApiResponse({
        status: Number(status),
        description,
        type: Number(status) === 429 ? TooManyRequestsBody : ErrorBody,
        headers: HEADERS[Number(status)],
      }),
    ),
  );
}

/** The answers of every route that takes a JSON body, before any credential is looked at. */
export const BODY_ERRORS = {
  413: 'The body is over 16 KiB; refused unread.',
  415: 'The body is not JSON: send Content-Type: application/json.',
} as const;

/** The answers every authenticated route can give, whatever it does. */
export const AUTH_ERRORS = {
  401: 'Missing, malformed, expired or revoked credential (also: a key whose owner left its org).',
  403: 'An API key used from outside its allowed_cidrs.',
  429: "Too many failed authentications from this address (AUTH_FAILURE_LIMIT per minute); or the API key's rate window is reached (the answer carries RateLimit-Policy and RateLimit, draft-ietf-httpapi-ratelimit-headers, as every answer of a rate-limited key does) or its credits are spent; see Retry-After.",
  503: 'The database is unavailable; retry shortly.',
} as const;

/** The 403 of every route only an org's owners and admins may call. */
export const ORG_ADMINS_ONLY =
  'Called with an API key, or the caller is a member or viewer of the org (owners and admins only).';

/** The 404 of a route under an org: no such org and an org the caller is not in answer alike. */
export const ORG_404 = 'The org does not exist or the caller is not a member; both look identical.';

/**
 * The enum a scope field declares (`@ApiProperty({ enum: SCOPE_ENUM })`): the contract's two, which
 * `applyScopeRegistry` replaces in a built document with the running registry's scopes.
 */
export const SCOPE_ENUM: readonly string[] = Object.keys(CONTRACT_SCOPES);

const ANY_SCOPE =
  'A scope the deployment registers: decisions:read, decisions:write, and any the deployment adds (GET /scopes lists them).';

const isScopeEnum = (values: unknown): boolean =>
  Array.isArray(values) && values.length === SCOPE_ENUM.length && values.every((v, i) => v === SCOPE_ENUM[i]);

/**
 * Puts the running registry's scopes into every scope enum of a built OpenAPI document (request
 * and response schemas alike), so a generated client knows the deployment's scopes. The standalone
 * server applies it; a host serving its own document calls it after `SwaggerModule.createDocument`.
 * With no registry (null) the scopes become plain strings, for a client meant for any deployment.
 */
export function applyScopeRegistry(document: OpenAPIObject, registry: ScopeRegistry | null): OpenAPIObject {
  const names = registry ? [...registry.names] : null;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const o = node as Record<string, unknown>;
    if (isScopeEnum(o.enum)) {
      if (names) o.enum = [...names];
      else {
        delete o.enum;
        o.description = ANY_SCOPE;
      }
    }
    for (const value of Object.values(o)) visit(value);
  };
  visit(document.paths);
  visit(document.components);
  return document;
}

const METER_REF = { $ref: '#/components/schemas/Meter' };

/**
 * Lists the running deployment's meters in the `UsageMeters` schema of a built OpenAPI document
 * (GET /usage's and each day's `meters`): every meter a required property with its description,
 * and no other. The standalone server applies it; a host serving its own document calls it after
 * `SwaggerModule.createDocument`. With no registry (null) the contract's four are listed and any
 * other name is allowed, for a client meant for any deployment.
 */
export function applyMeterRegistry(document: OpenAPIObject, registry: MeterRegistry | null): OpenAPIObject {
  const schema = document.components?.schemas?.UsageMeters as Record<string, unknown> | undefined;
  if (!schema) return document;
  const meters = registry ?? new MeterRegistry();
  schema.properties = Object.fromEntries(
    meters.names.map((name) => [name, { description: meters.describe(name), allOf: [METER_REF] }]),
  );
  schema.required = [...meters.names];
  schema.additionalProperties = registry ? false : { ...METER_REF, description: 'A meter the deployment defines.' };
  return document;
}
