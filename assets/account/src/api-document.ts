// The deployment's OpenAPI document (GET /openapi.json, public): which optional routes exist, and
// the server's rules the forms show (name length, scopes, day ranges, audit actions), read from
// it rather than restated here. A deployment without the document shows fewer features.

interface SchemaObject {
  type?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  items?: SchemaObject;
  properties?: Record<string, SchemaObject>;
}

interface OperationObject {
  parameters?: { name: string; in: string; schema?: SchemaObject }[];
}

export interface OpenApiDocument {
  paths?: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, SchemaObject> };
}

export class ApiDocument {
  constructor(private readonly doc: OpenApiDocument = {}) {}

  /** Does the deployment's document list this route? Unknown (no document) counts as no. */
  hasRoute(method: string, path: string): boolean {
    return Boolean(this.doc.paths?.[path]?.[method]);
  }

  /** A property of a component schema, e.g. ('MintApiKeyRequest', 'name'). */
  property(schema: string, name: string): SchemaObject | undefined {
    return this.doc.components?.schemas?.[schema]?.properties?.[name];
  }

  /** The values of an enum property (or of an array property's items). */
  choices(schema: string, name: string): string[] {
    const p = this.property(schema, name);
    return p?.enum ?? p?.items?.enum ?? [];
  }

  /** A query parameter's enum, e.g. the audit log's actions. */
  queryChoices(path: string, name: string): string[] {
    const params = this.doc.paths?.[path]?.get?.parameters ?? [];
    return params.find((p) => p.name === name && p.in === 'query')?.schema?.enum ?? [];
  }

  /** { min, max } of a number property, or maxLength of a string one (as max). */
  range(schema: string, name: string): { min?: number; max?: number } {
    const p = this.property(schema, name);
    return { min: p?.minimum, max: p?.maximum ?? p?.maxLength };
  }
}

export async function loadApiDocument(fetchJson = fetch): Promise<ApiDocument> {
  try {
    const res = await fetchJson('/openapi.json', { headers: { Accept: 'application/json' }, credentials: 'omit' });
    return new ApiDocument(res.ok ? ((await res.json()) as OpenApiDocument) : {});
  } catch {
    return new ApiDocument({});
  }
}
