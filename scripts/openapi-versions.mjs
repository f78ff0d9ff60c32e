// The API versions an OpenAPI document declares, for the typed client's build (build-client.mjs).

/**
 * Oldest first: `info.x-api-versions`, else the enum of an `Api-Version` header parameter of any
 * operation; empty when the document declares none (the client then falls back to its constant).
 */
export function declaredVersions(document) {
  const listed = document.info?.['x-api-versions'];
  if (Array.isArray(listed)) return [...new Set(listed.map(String))].sort();
  const found = new Set();
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item ?? {})) {
      for (const parameter of operation?.parameters ?? []) {
        if (parameter.in === 'header' && parameter.name?.toLowerCase() === 'api-version')
          for (const v of parameter.schema?.enum ?? []) found.add(String(v));
      }
    }
  }
  return [...found].sort();
}
