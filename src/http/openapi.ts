import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { ADMIN_TOKEN_SCHEME } from '../personal-data/personal-data.options.js';
import {
  API_KEY_SCHEME,
  applyMeterRegistry,
  applyScopeRegistry,
  BODY_ERRORS,
  SESSION_SCHEME,
} from '../common/openapi.js';
import { ScopeRegistry } from '../common/scope-registry.js';
import { MeterRegistry } from '../common/meter-registry.js';
import type { VersioningPolicy } from '../versioning/versioning-policy.js';
import { documentsByVersion } from '../versioning/openapi-versions.js';

export const OPENAPI_JSON_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';
export const METRICS_TOKEN_SCHEME = 'metricsToken';

const TITLE = 'Keys, Usage and Identity API';

const DESCRIPTION = `
API keys bound to one organisation (mint, list, revoke), the daily usage meters, and the identity of the caller.

**Credentials.** Every request carries \`Authorization: Bearer <token>\`. A token that starts with \`svc_live_\` is an
API key (\`apiKey\` scheme); anything else is a browser session JWT (\`session\` scheme). Key lifecycle is session-only:
an API key there gets 403. \`/usage\` (scope \`decisions:read\`) and \`/me\` (no scope) take either.
A missing, malformed, expired or revoked credential gets 401 with \`WWW-Authenticate: Bearer\`.

**Errors.** Every error body is \`{ "statusCode", "error", "message" }\` (schema \`KuiError\`); 400 messages name the field and the rule.

For development, \`npm run --silent admin -- session --user <user-id>\` prints a session token.
`.trim();

function packageVersion(): string {
  // dist/http/openapi.js and src/http/openapi.ts are both two levels below the package root.
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

export interface OpenApiOptions {
  /** METRICS_TOKEN is set: /metrics takes the `metricsToken` bearer scheme; otherwise no credential. */
  metricsToken: boolean;
}

/** The OpenAPI 3 document, generated from the controllers' explicit decorators. */
export function buildOpenApiDocument(app: INestApplication, options: OpenApiOptions): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.0.3')
    .setTitle(TITLE)
    .setDescription(DESCRIPTION)
    .setVersion(packageVersion())
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          'Browser session JWT (claims: sub = user id, email, exp; optional org_id). Required by the key lifecycle routes.',
      },
      SESSION_SCHEME,
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'svc_live_ API key',
        description:
          'An API key `svc_live_…`. Accepted by /usage (needs decisions:read) and /me; refused (403) by key lifecycle.',
      },
      API_KEY_SCHEME,
    )
    .addTag('api-keys', 'Key lifecycle (browser session only)')
    .addTag(
      'orgs',
      "The caller's orgs and, for owners and admins, their members, keys and audit log (browser session only)",
    )
    .addTag('usage', 'Plan and daily meters')
    .addTag('identity', 'Who the caller is')
    .addTag('operations', 'Health probes and metrics (unauthenticated by default)')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        description:
          'The ADMIN_API_TOKEN of this deployment: the operator only (never a session or an API key). Unset: the /admin routes answer 404.',
      },
      ADMIN_TOKEN_SCHEME,
    )
    .addTag('operator', "A person's data on request, for the operator of the deployment (ADMIN_API_TOKEN)")
    .addTag('account', 'The browser account page (public HTML; it calls the API with a session)')
    .addTag(
      'webhooks',
      "An org's webhook endpoints and their delivery log: Standard Webhooks signing (owners and admins, browser session only)",
    )
    .addTag(
      'leaked keys',
      'Revocation of leaked keys by whoever finds them: GitHub secret scanning, or anyone holding the key (no credential)',
    )
    // Relative: the API is wherever this document was fetched from.
    .addServer('/', 'This deployment')
    .build();
  if (options.metricsToken) {
    config.components!.securitySchemes![METRICS_TOKEN_SCHEME] = {
      type: 'http',
      scheme: 'bearer',
      description: 'The METRICS_TOKEN of this deployment.',
    };
  }
  // In Nest's preview mode (the client build) no provider is built: the default registry stands in.
  const found: ScopeRegistry | undefined = app.get(ScopeRegistry, { strict: false });
  const registry = found ?? new ScopeRegistry();
  const meters: MeterRegistry | undefined = app.get(MeterRegistry, { strict: false });
  const document = applyMeterRegistry(
    applyScopeRegistry(SwaggerModule.createDocument(app, config), registry),
    meters ?? new MeterRegistry(),
  );
  const metrics = document.paths['/metrics']?.get;
  if (metrics) {
    metrics.security = options.metricsToken ? [{ [METRICS_TOKEN_SCHEME]: [] }] : [];
    // Without METRICS_TOKEN nothing is checked, so there is no 401 to document.
    if (!options.metricsToken) delete metrics.responses['401'];
  }
  // Routes that declare no credential are public, and say so: `security: []` (health, account page).
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const) {
      const operation = item[method];
      if (operation && !operation.security) operation.security = [];
      // Every operation that takes a body can be refused for its size or its type before it runs.
      if (operation?.requestBody) {
        const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/KuiError' } } } };
        const tooLarge = path.endsWith('/secret-scanning/github')
          ? "The body is over this route's limit (GitHub's reports of up to 1,000 tokens); refused unread."
          : BODY_ERRORS[413];
        operation.responses['413'] ??= { description: tooLarge, ...error };
        operation.responses['415'] ??= { description: BODY_ERRORS[415], ...error };
      }
    }
  }
  // decisions.md: unknown body fields are a 400, so the request schema admits no others.
  const mint = document.components?.schemas?.MintApiKeyRequest;
  if (mint && !('$ref' in mint)) mint.additionalProperties = false;
  const rotate = document.components?.schemas?.RotateApiKeyRequest;
  if (rotate && !('$ref' in rotate)) rotate.additionalProperties = false;
  // Events out: the same rule for its request bodies.
  for (const name of [
    'CreateWebhookRequest',
    'UpdateWebhookRequest',
    'RotateWebhookSecretRequest',
    'RevokeCredentialsRequest',
  ]) {
    const body = document.components?.schemas?.[name];
    if (body && !('$ref' in body)) body.additionalProperties = false;
  }
  return document;
}

/**
 * GET /openapi.json?version=<date> (default: the newest version; see src/versioning/) and GET /docs
 * (Swagger UI from swagger-ui-dist, served locally by @fastify/static, on the newest document).
 */
export function setupOpenApi(
  app: NestFastifyApplication,
  document: OpenAPIObject,
  policy: VersioningPolicy,
  now: Date,
): void {
  const documents = documentsByVersion(document, policy, now);
  const newest = documents.get(policy.table.newest)!;
  app
    .getHttpAdapter()
    .getInstance()
    .get(OPENAPI_JSON_PATH, (request, reply) => {
      const asked = (request.query as { version?: unknown }).version;
      const text = asked === undefined ? newest : typeof asked === 'string' ? documents.get(asked) : undefined;
      if (text === undefined) {
        const message = `version must be one of ${[...documents.keys()].join(', ')}`;
        return reply
          .code(400)
          .type('application/json; charset=utf-8')
          .send({ statusCode: 400, error: 'Bad Request', message });
      }
      return reply.type('application/json; charset=utf-8').send(text);
    });
  SwaggerModule.setup(DOCS_PATH.slice(1), app, JSON.parse(newest) as OpenAPIObject, {
    raw: false,
    customSiteTitle: TITLE,
    // No call-outs: the validator badge would fetch from validator.swagger.io.
    swaggerOptions: { validatorUrl: null, persistAuthorization: false, tryItOutEnabled: false },
  });
}
