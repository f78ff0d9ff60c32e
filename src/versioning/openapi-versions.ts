import type { OpenAPIObject, OperationObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import { API_VERSION_HEADER } from './api-versions.js';
import { changesAfter, type JsonObject } from './version-changes.js';
import type { VersioningPolicy } from './versioning-policy.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
const PARAMETER = 'ApiVersion';

function operations(document: OpenAPIObject): OperationObject[] {
  return Object.values(document.paths).flatMap((item) => METHODS.flatMap((m) => (item[m] ? [item[m]] : [])));
}

/**
 * The OpenAPI document of one API version, from the newest one the controllers describe: the
 * response schemas of the operations a later change touches as they were in `version`, the
 * `Api-Version` request header as a reusable parameter (not added to each operation: their
 * parameter lists stay those of the routes), and deprecated operations and parameters marked.
 * The differences are named in `info.description`.
 */
export function documentForVersion(
  newest: OpenAPIObject,
  policy: VersioningPolicy,
  version: string,
  now: Date,
): OpenAPIObject {
  const document = structuredClone(newest);
  // The versions this deployment serves, oldest first: what the typed client reads for its default.
  (document.info as { 'x-api-versions'?: string[] })['x-api-versions'] = [...policy.table.supported(now)];
  const schemas = (document.components!.schemas ??= {});
  (document.components!.parameters ??= {})[PARAMETER] = {
    name: API_VERSION_HEADER,
    in: 'header',
    required: false,
    description: `The API version to answer with (default: the version your org is pinned to). Versions: ${policy.table.supported(now).join(', ')}.`,
    schema: { type: 'string', format: 'date', enum: policy.table.supported(now) },
  };
  const later = changesAfter(policy.changes, version);
  for (const operation of operations(document)) {
    const id = operation.operationId ?? '';
    for (const change of later) {
      const transform = change.operations[id]?.schema;
      const content = (
        operation.responses['200'] as
          { content?: Record<string, { schema?: SchemaObject | ReferenceObject }> } | undefined
      )?.content?.['application/json'];
      if (!transform || !content?.schema || !('$ref' in content.schema)) continue;
      const name = content.schema.$ref.split('/').pop()!;
      const older = `${name}_${version.replaceAll('-', '')}`;
      schemas[older] = transform(structuredClone(schemas[name]) as JsonObject);
      content.schema = { $ref: `#/components/schemas/${older}` };
    }
    for (const d of policy.forOperation(id)) {
      const note = `Deprecated; sunset ${d.sunsetAt.toISOString().slice(0, 10)}: ${d.replacement}`;
      const parameter = 'operationId' in d.target ? d.target.parameter : undefined;
      const param = parameter
        ? (operation.parameters ?? []).find((p) => !('$ref' in p) && p.name === parameter)
        : undefined;
      if (param && !('$ref' in param))
        Object.assign(param, { deprecated: true, description: `${param.description ?? ''} ${note}`.trim() });
      else if (!parameter)
        Object.assign(operation, { deprecated: true, description: `${operation.description ?? ''} ${note}`.trim() });
    }
  }
  const history = policy.table.versions
    .filter((v) => v.date !== policy.table.first)
    .map(
      (v) =>
        `- **${v.date}**: ${
          policy.changes
            .filter((c) => c.version === v.date)
            .map((c) => c.description)
            .join(' ') || v.summary
        }`,
    )
    .join('\n');
  document.info.description = `${document.info.description ?? ''}\n\n**API version ${version}.** Send \`${API_VERSION_HEADER}: <date>\` to choose another; every answer names the version it was served with.\n\nChanges by version:\n${history}`;
  return document;
}

/** Every served version's document, serialised once at start. */
export function documentsByVersion(newest: OpenAPIObject, policy: VersioningPolicy, now: Date): Map<string, string> {
  return new Map(
    policy.table.supported(now).map((v) => [v, JSON.stringify(documentForVersion(newest, policy, v, now))]),
  );
}
