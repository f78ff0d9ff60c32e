import ajvFormats from 'ajv-formats';
import { OpenAPIBackend, SetMatchType, type Document } from 'openapi-backend';

/**
 * Every live response of the HTTP tests, checked against the service's own OpenAPI document
 * (`GET /openapi.json` of the app under test): the status must be one the operation documents,
 * the JSON body must match its schema, and the documented headers (WWW-Authenticate on 401,
 * Retry-After on 429) must be there. Validation is openapi-backend's (Ajv underneath).
 *
 * Responses to requests no operation describes (unknown routes, /docs, /openapi.json itself) are
 * not checked, nor are the few answers Node or the HTTP parser give before any route is chosen.
 */
const BELOW_ROUTING = new Set([408, 417, 431]);

export interface LiveResponse {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

export class OpenApiResponseValidator {
  private constructor(
    private readonly api: OpenAPIBackend,
    private readonly document: Document,
  ) {}

  private static readonly byDocument = new Map<string, Promise<OpenApiResponseValidator>>();

  /** One compiled validator per distinct document (documents differ only by configuration). */
  static for(documentText: string): Promise<OpenApiResponseValidator> {
    let validator = this.byDocument.get(documentText);
    if (!validator) {
      const document = JSON.parse(documentText) as Document;
      validator = new OpenAPIBackend({
        definition: structuredClone(document),
        strict: true,
        // Each operation's validators are compiled when a response of it is first checked, not
        // all of them up front: compiling every operation's took 3 to 5 s of CPU in every test
        // file, on the event loop the app under test shares, so a burst of requests waiting on
        // the first answer (and their database client timers) stalled behind it. The document's
        // validity is its own test (openapi.test.ts, by an independent parser).
        quick: true,
        // The schemas come from a document already checked; compiling Ajv's meta-schema into
        // every per-operation Ajv instance to re-check them was most of the remaining time.
        ajvOpts: { validateSchema: false },
        // uuid, email, date-time: checked, not ignored.
        // ajv-formats is CommonJS: its plugin is `.default` of the module under nodenext ESM.
        customizeAjv: (ajv) => (ajvFormats.default(ajv), ajv),
      })
        .init()
        .then((api) => new OpenApiResponseValidator(api, document));
      this.byDocument.set(documentText, validator);
    }
    return validator;
  }

  /** The problems with one response, empty when it is what the document promises. */
  problems(method: string, url: string, res: LiveResponse): string[] {
    const { pathname, searchParams } = new URL(url);
    const operation = this.api.matchOperation({
      method: method.toLowerCase(),
      path: pathname,
      headers: {},
      query: Object.fromEntries(searchParams),
    });
    if (!operation || BELOW_ROUTING.has(res.status)) return [];
    const where = `${method.toUpperCase()} ${pathname} answered ${res.status}`;
    const documented = operation.responses ?? {};
    const response = documented[String(res.status)] ?? documented[`${String(res.status)[0]}XX`] ?? documented.default;
    if (!response)
      return [
        `${where}, which ${operation.operationId} does not document (documented: ${Object.keys(documented).join(', ')})`,
      ];
    const out: string[] = [];
    const content = 'content' in response ? response.content : undefined;
    const contentType = res.headers.get('content-type') ?? '';
    if (!content || Object.keys(content).length === 0) {
      if (res.text !== '') out.push(`${where} with a body, but the document describes none`);
    } else if (/^application\/json\b/.test(contentType)) {
      if (!content['application/json'])
        out.push(`${where} with JSON, but the document describes ${Object.keys(content).join(', ')}`);
      else {
        const result = this.api.validateResponse(res.body, operation, res.status);
        for (const e of result.errors ?? [])
          out.push(`${where}: body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
      }
    } else if (!Object.keys(content).some((type) => contentType.startsWith(type))) {
      out.push(
        `${where} as ${contentType || 'no content type'}, but the document describes ${Object.keys(content).join(', ')}`,
      );
    }
    const headers = Object.fromEntries([...res.headers].map(([k, v]) => [k.toLowerCase(), v]));
    const result = this.api.validateResponseHeaders(headers, operation, {
      statusCode: res.status,
      setMatchType: SetMatchType.Superset,
    });
    for (const e of result.errors ?? []) out.push(`${where}: headers${e.instancePath} ${e.message}`);
    return out;
  }

  get openapi(): string {
    return this.document.openapi;
  }
}
