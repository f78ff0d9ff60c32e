/*
 * How versions differ, in one place (Stripe's "version change modules"). Services and
 * repositories speak only the newest shape; a change declares, for the operations it touches,
 * how to bring a request of the version before it forward to its own shape, and how to turn a
 * newest-shape answer back into the older one. For a request served with version V, the
 * interceptor bound to the touched operations (operation-versioning.ts) applies the request
 * transforms of every version newer than V, oldest first, before the route's validation pipes
 * (so DTOs validate the newest shape only), and the response transforms newest first.
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

/** What a request transform reads and returns: the parsed JSON body (any JSON value, or undefined) and the query. */
export interface RequestInput {
  body: unknown;
  query: Record<string, unknown>;
}

export interface OperationChange {
  /**
   * A request of the version before `version` → the same request in `version`'s shape. Runs after
   * authentication and before validation: `body` is whatever the caller sent, so check its type.
   * Return new objects; the input is not to be changed.
   */
  request?: (input: RequestInput) => RequestInput;
  /** `version`'s response body (what the handler returns, before serialisation) → the body the version before it answered. */
  response?: (body: JsonObject) => JsonObject;
  /** The OpenAPI response schema of the older version, for the per-version document. */
  schema?: (schema: JsonObject) => JsonObject;
}

export const VERSION_CHANGES: readonly VersionChange[] = [
  {
    version: '2026-11-26',
    description:
      "`GET /api-keys` always carries `next_cursor`: the next page's cursor, or null on the last page. Before, it was present only when more keys existed.",
    operations: {
      listApiKeys: {
        response: (body) => {
          if (body.next_cursor !== null) return body;
          const { next_cursor: _end, ...older } = body;
          return older;
        },
        schema: (schema) => {
          const properties = { ...(schema.properties as JsonObject) };
          properties.next_cursor = {
            type: 'string',
            description: 'Present only when more keys exist: pass it as `cursor` for the next page.',
          };
          return {
            ...schema,
            properties,
            required: ((schema.required as string[] | undefined) ?? []).filter((p) => p !== 'next_cursor'),
          };
        },
      },
    },
  },
];

/** The changes to apply, newest first, to serve `version` (those introduced after it). */
export function changesAfter(changes: readonly VersionChange[], version: string): VersionChange[] {
  return changes.filter((c) => c.version > version).sort((a, b) => (a.version < b.version ? 1 : -1));
}
