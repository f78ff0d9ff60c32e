/** The API versions an OpenAPI document declares, oldest first (empty: none). */
export function declaredVersions(document: {
  info?: Record<string, unknown>;
  paths?: Record<string, unknown>;
}): string[];
