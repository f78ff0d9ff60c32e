/*
 * How versions differ, in one place (Stripe's "version change modules"). Services and
 * repositories speak only the newest shape; a change declares, for the operations it touches,
 * how to turn a newest-shape answer into the shape of the version before it. The edge
 * (version-edge.ts) applies, for an answer served with version V, the changes of every version
 * newer than V, newest first. Requests are not converted: the org that decides a request's version
 * is known only after authentication, inside the route; a changed request shape is accepted in
 * both shapes by the route's DTO.
 *
 * Operations are named by their OpenAPI operationId, so a host's route prefix changes nothing.
 */

export type JsonObject = Record<string, unknown>;

export interface VersionChange {
  /** The version that introduced the change: answers of older versions are converted back. */
  version: string;
  /** One line for the changelog and the OpenAPI description. */
  description: string;
  /** operationId → the transforms for that operation. */
  operations: Readonly<Record<string, OperationChange>>;
}

export interface OperationChange {
  /** Newest-shape response body → the body the version before `version` answered. */
  response?(body: JsonObject): JsonObject;
  /** The OpenAPI response schema of the older version, for the per-version document. */
  schema?(schema: JsonObject): JsonObject;
}

export const VERSION_CHANGES: readonly VersionChange[] = [
  {
    version: '2026-11-26',
    description: '`GET /api-keys` always carries `next_cursor`: the next page\'s cursor, or null on the last page. Before, it was present only when more keys existed.',
    operations: {
      listApiKeys: {
        response: (body) => {
          if (body.next_cursor !== null) return body;
          const { next_cursor: _end, ...older } = body;
          return older;
        },
        schema: (schema) => {
          const properties = { ...(schema.properties as JsonObject) };
          properties.next_cursor = { type: 'string', description: 'Present only when more keys exist: pass it as `cursor` for the next page.' };
          return { ...schema, properties, required: ((schema.required as string[] | undefined) ?? []).filter((p) => p !== 'next_cursor') };
        },
      },
    },
  },
];

/** The changes to apply, newest first, to serve `version` (those introduced after it). */
export function changesAfter(changes: readonly VersionChange[], version: string): VersionChange[] {
  return changes.filter((c) => c.version > version).sort((a, b) => (a.version < b.version ? 1 : -1));
}
