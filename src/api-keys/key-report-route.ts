import { applyDecorators } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiErrors, AUTH_ERRORS, ORG_ADMINS_ONLY } from '../common/openapi.js';
import { KeyLifecycle, NOT_CONFIGURED, SESSION_REQUIRED } from './api-keys.controller.js';

/** Whose keys a report route reads: the caller's own key, one key of an org, or all of an org's keys. */
export type KeyReportAudience = 'own key' | 'org key' | 'org';

const AUDIENCES: Record<KeyReportAudience, { params: string[]; preface: string; 403: string; 404: string }> = {
  'own key': {
    params: ['keyID'],
    preface: 'Browser session only, your own key.',
    403: SESSION_REQUIRED,
    404: "No such key, or not the caller's; both cases look identical.",
  },
  'org key': {
    params: ['org_id', 'keyID'],
    preface: 'Browser session only.',
    403: ORG_ADMINS_ONLY,
    404: 'The org does not exist or the caller is not a member; or no such key in this org.',
  },
  org: {
    params: ['org_id'],
    preface: 'Browser session only.',
    403: ORG_ADMINS_ONLY,
    404: 'The org does not exist or the caller is not a member; both cases look identical.',
  },
};

/**
 * A session-only route that reads a report about keys (which scopes they used, what their
 * verifications decided): its guards, its OpenAPI operation, path parameters and every answer
 * but the 200's body, declared once for the three audiences.
 */
export function KeyReportRoute(route: {
  audience: KeyReportAudience;
  operationId: string;
  summary: string;
  description: string;
  /** The 400's text: which parameter or query rule was broken. */
  badRequest: string;
  type: new () => unknown;
}): MethodDecorator {
  const audience = AUDIENCES[route.audience];
  return applyDecorators(
    KeyLifecycle(),
    ...(route.audience === 'own key' ? [] : [ApiTags('orgs')]),
    ApiOperation({
      operationId: route.operationId,
      summary: route.summary,
      description: `${audience.preface} ${route.description}`,
    }),
    ...audience.params.map((name) => ApiParam({ name, format: 'uuid' })),
    ApiOkResponse({ type: route.type }),
    ApiErrors({
      400: route.badRequest,
      ...AUTH_ERRORS,
      403: audience[403],
      404: audience[404],
      501: NOT_CONFIGURED,
    }),
  );
}
