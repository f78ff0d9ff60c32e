import { OpenApiResponseValidator } from './openapi-validator.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/**
 * The service's document of the API version a response was served with (its `Api-Version`),
 * fetched once per server and version; null where none is served (a host app).
 */
const documents = new Map<string, Promise<OpenApiResponseValidator | null>>();

function validatorFor(baseUrl: string, version: string | null): Promise<OpenApiResponseValidator | null> {
  const query = version ? `?version=${encodeURIComponent(version)}` : '';
  let found = documents.get(baseUrl + query);
  if (!found) {
    found = fetch(`${baseUrl}/openapi.json${query}`)
      .then(async (res) => {
        const text = await res.text();
        return res.status === 200 && text.startsWith('{"openapi"') ? OpenApiResponseValidator.for(text) : null;
      })
      .catch(() => null);
    documents.set(baseUrl + query, found);
  }
  return found;
}

export class OpenApiMismatchError extends Error {}

/**
 * A tiny HTTP client for end-to-end tests: real requests over a real socket. Every response is
 * checked against the server's own OpenAPI document (see openapi-validator.ts); a response the
 * document does not promise fails the test. `{ validate: false }` is for the few tests that count
 * requests or log lines and must not see the document being fetched.
 */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly options: { validate?: boolean } = {},
  ) {}

  async request<T = any>(
    method: string,
    path: string,
    options: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['content-type'] = 'application/json';
    const res = await fetch(this.baseUrl + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const response = { status: res.status, headers: res.headers, body: parsed as T, text };
    if (this.options.validate !== false) {
      const validator = await validatorFor(this.baseUrl, res.headers.get('api-version'));
      const problems = validator?.problems(method, this.baseUrl + path, response) ?? [];
      if (problems.length > 0)
        throw new OpenApiMismatchError(
          `The response does not match the OpenAPI document:\n- ${problems.join('\n- ')}\nbody: ${text.slice(0, 500)}`,
        );
    }
    return response;
  }

  get<T = any>(path: string, token?: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, { token, headers });
  }
  post<T = any>(path: string, token: string | undefined, body: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, { token, body, headers });
  }
  delete<T = any>(path: string, token?: string) {
    return this.request<T>('DELETE', path, { token });
  }
}
