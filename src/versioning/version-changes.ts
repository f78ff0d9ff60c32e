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
  /** The OpenAPI component schemas (by name) as the version before it described them; changed in place. */
  components?: (schemas: Record<string, JsonObject>) => void;
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

/**
 * A key record as versions before 2026-11-27 answered it: `status` (`pending` or `denied`, what
 * `state` says now) and, outside the org admins' lists, no `state`.
 */
function keyRecordBefore20261127(record: JsonObject, keepState: boolean): JsonObject {
  const { state, ...older } = record;
  if (state === 'pending' || state === 'denied') older.status = state;
  return keepState ? { ...older, state } : older;
}
const recordBefore20261127: OperationChange = { response: (body) => keyRecordBefore20261127(body, false) };
const listBefore20261127 = (keepState: boolean): OperationChange => ({
  response: (body) =>
    Array.isArray(body.keys)
      ? { ...body, keys: (body.keys as JsonObject[]).map((k) => keyRecordBefore20261127(k, keepState)) }
      : body,
});
const STATUS_SCHEMA = {
  type: 'string',
  enum: ['pending', 'denied'],
  description:
    "Present only for a key minted under the org's approval policy: `pending` until an owner or admin approves it (it does not verify until then; approved, the field goes away), `denied` once refused (it never verifies).",
};

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
  {
    version: '2026-11-27',
    description:
      "Every key record carries `state` (active, revoked, expired, pending, denied or disabled); `status` is gone, as `state` says `pending` and `denied`. Before, only the org admins' lists carried `state`, and a key held for approval carried `status`.",
    operations: {
      mintApiKey: recordBefore20261127,
      rotateApiKey: recordBefore20261127,
      updateApiKey: recordBefore20261127,
      updateOrgApiKey: recordBefore20261127,
      mintServiceKey: recordBefore20261127,
      rotateServiceKey: recordBefore20261127,
      listApiKeys: listBefore20261127(false),
      listOrgApiKeys: listBefore20261127(true),
      listServiceKeys: listBefore20261127(true),
    },
    components: (schemas) => {
      for (const name of ['ApiKey', 'MintedApiKey', 'RotatedApiKey', 'OrgApiKey', 'ServiceKey', 'MintedServiceKey']) {
        const schema = schemas[name];
        if (!schema) continue;
        const properties: JsonObject = { ...(schema.properties as JsonObject), status: STATUS_SCHEMA };
        const required = ((schema.required as string[] | undefined) ?? []).filter((p) => p !== 'state');
        // The org admins' list always said `state`; a service key's only in lists.
        if (name === 'OrgApiKey') required.push('state');
        else if (name.endsWith('ServiceKey'))
          properties.state = { ...(properties.state as JsonObject), description: "In lists: the key's state." };
        else delete properties.state;
        schemas[name] = { ...schema, properties, required };
      }
    },
  },
];

/** The changes to apply, newest first, to serve `version` (those introduced after it). */
export function changesAfter(changes: readonly VersionChange[], version: string): VersionChange[] {
  return changes.filter((c) => c.version > version).sort((a, b) => (a.version < b.version ? 1 : -1));
}
