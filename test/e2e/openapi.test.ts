import { KEY_STATES } from '../../src/api-keys/key-state.js';
import { compileErrors, validate } from '@readme/openapi-parser';
import type { OpenAPIV3 } from 'openapi-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Every status of the interface's tables (service-interface.md section 4 and 7), plus what
 * decisions.md adds where the interface is silent (401 for a bad credential everywhere; the 400
 * and 404 of an org that cannot be resolved). The document may say more; it may not say less.
 */
const CONTRACT: Record<string, Record<string, number[]>> = {
  '/api-keys': {
    post: [201, 400, 401, 403, 404, 409, 501],
    get: [200, 400, 401, 403, 501],
  },
  '/api-keys/{keyID}': {
    delete: [204, 400, 401, 403, 404, 501],
  },
  '/usage': { get: [200, 400, 401, 403] },
  '/me': { get: [200, 401, 404] },
};

const LIFECYCLE = [
  ['/api-keys', 'post'],
  ['/api-keys', 'get'],
  ['/api-keys/{keyID}', 'delete'],
] as const;

type Doc = OpenAPIV3.Document;
type Schema = OpenAPIV3.SchemaObject;

describe('the OpenAPI document and the API reference', () => {
  let t: TestApp;
  let doc: Doc;
  const schema = (name: string) => doc.components!.schemas![name] as Schema;
  const op = (path: string, method: string) => (doc.paths[path] as Record<string, OpenAPIV3.OperationObject>)[method];

  beforeAll(async () => {
    t = await startTestApp();
    const res = await t.api.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = res.body as Doc;
  });
  afterAll(async () => t?.close());

  it('is a valid OpenAPI 3 document by an independent parser', async () => {
    expect(doc.openapi).toMatch(/^3\./);
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('lists every status code of the interface for every operation, each with a meaning', () => {
    for (const [path, methods] of Object.entries(CONTRACT)) {
      for (const [method, statuses] of Object.entries(methods)) {
        const operation = op(path, method);
        expect(operation, `${method.toUpperCase()} ${path}`).toBeDefined();
        for (const status of statuses) {
          const response = operation.responses[String(status)] as OpenAPIV3.ResponseObject | undefined;
          expect(response, `${method.toUpperCase()} ${path} ${status}`).toBeDefined();
          expect(response!.description.length, `${method.toUpperCase()} ${path} ${status}`).toBeGreaterThan(10);
        }
      }
    }
  });

  it('describes every error response with the { statusCode, error, message } body, a 429 with the budget too', () => {
    const error = schema('KuiError');
    expect(error.required).toEqual(expect.arrayContaining(['statusCode', 'error', 'message']));
    expect((error.properties!.statusCode as Schema).type).toBe('integer');
    const tooMany = schema('KuiTooManyRequests');
    expect(JSON.stringify(tooMany)).toContain('budget');
    expect(JSON.stringify(tooMany)).toContain('retry_after');
    for (const [path, methods] of Object.entries(CONTRACT)) {
      for (const method of Object.keys(methods)) {
        for (const [status, response] of Object.entries(op(path, method).responses)) {
          if (Number(status) < 400) continue;
          const content = (response as OpenAPIV3.ResponseObject).content?.['application/json']?.schema;
          const body = status === '429' ? 'KuiTooManyRequests' : 'KuiError';
          expect(content, `${method} ${path} ${status}`).toEqual({ $ref: `#/components/schemas/${body}` });
        }
      }
    }
  });

  it('documents the challenge header of a 401', () => {
    const unauthorized = op('/me', 'get').responses['401'] as OpenAPIV3.ResponseObject;
    expect(Object.keys(unauthorized.headers ?? {})).toContain('WWW-Authenticate');
  });

  it('declares two bearer schemes and says which routes take a session and which an API key', () => {
    const schemes = doc.components!.securitySchemes as Record<string, OpenAPIV3.HttpSecurityScheme>;
    expect(schemes.session).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const [path, method] of LIFECYCLE) {
      expect(op(path, method).security, `${method} ${path}`).toEqual([{ session: [] }]);
    }
    for (const path of ['/usage', '/me']) {
      expect(op(path, 'get').security).toEqual(expect.arrayContaining([{ session: [] }, { apiKey: [] }]));
      expect(op(path, 'get').security).toHaveLength(2);
    }
  });

  it('gives the mint request its limits: org_id a required UUID, name 100, scopes enum, expires_in_days 0 to 366', () => {
    const body = op('/api-keys', 'post').requestBody as OpenAPIV3.RequestBodyObject;
    expect(body.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/MintApiKeyRequest' });
    const mint = schema('MintApiKeyRequest');
    const p = mint.properties as Record<string, Schema>;
    expect(mint.required).toEqual(['org_id']);
    expect(mint.additionalProperties).toBe(false);
    expect(p.org_id).toMatchObject({ type: 'string', format: 'uuid' });
    expect(p.name).toMatchObject({ type: 'string', maxLength: 100 });
    expect(p.scopes).toMatchObject({
      type: 'array',
      items: { type: 'string', enum: ['decisions:read', 'decisions:write'] },
    });
    expect(p.expires_in_days).toMatchObject({ type: 'integer', minimum: 0, maximum: 366 });
  });

  it('puts no `default` on request fields (generated clients would demand them); the descriptions say the defaults', () => {
    const p = schema('MintApiKeyRequest').properties as Record<string, Schema>;
    for (const [name, field] of Object.entries(p)) expect(field, name).not.toHaveProperty('default');
    expect(p.expires_in_days.description).toMatch(/Omitted: 0/);
    expect(p.name.description).toMatch(/Omitted: ""/);
  });

  it('lets a nullable enum take null: org_role lists null among its values', () => {
    const role = schema('Principal').properties!.org_role as Schema;
    expect(role).toMatchObject({ type: 'string', nullable: true });
    expect(role.enum).toEqual(['owner', 'admin', 'member', 'viewer', null]);
  });

  it('documents 413 and 415 on the body route, 400 for a bad X-Org-Id, and 429 and 503 on every authenticated route', () => {
    expect(Object.keys(op('/api-keys', 'post').responses)).toEqual(expect.arrayContaining(['413', '415']));
    expect(Object.keys(op('/me', 'get').responses)).toContain('400');
    expect((op('/usage', 'get').responses['400'] as OpenAPIV3.ResponseObject).description).toMatch(
      /X-Org-Id is not a UUID/,
    );
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods as Record<string, OpenAPIV3.OperationObject>)) {
        if (!operation.security?.length) continue;
        for (const status of ['401', '429', '503'])
          expect(operation.responses[status], `${method} ${path} ${status}`).toBeDefined();
        const challenge = (operation.responses['401'] as OpenAPIV3.ResponseObject).headers![
          'WWW-Authenticate'
        ] as OpenAPIV3.HeaderObject;
        expect(challenge.required, `${method} ${path}`).toBe(true);
        const retry = (operation.responses['429'] as OpenAPIV3.ResponseObject).headers![
          'Retry-After'
        ] as OpenAPIV3.HeaderObject;
        expect(retry).toMatchObject({ required: true, schema: { type: 'integer' } });
      }
    }
  });

  it('marks public routes `security: []`, and they never answer 401 (/metrics without METRICS_TOKEN included)', () => {
    for (const path of ['/health/live', '/health/ready', '/account', '/metrics']) {
      expect(op(path, 'get').security, path).toEqual([]);
      expect(op(path, 'get').responses, path).not.toHaveProperty('401');
    }
    for (const item of Object.values(doc.paths)) {
      for (const operation of Object.values(item as Record<string, OpenAPIV3.OperationObject>))
        expect(operation.security).toBeDefined();
    }
  });

  it('documents the UUID path parameter of revoke and the optional org_id filter of list', () => {
    const params = op('/api-keys/{keyID}', 'delete').parameters as OpenAPIV3.ParameterObject[];
    expect(params).toContainEqual(
      expect.objectContaining({
        name: 'keyID',
        in: 'path',
        required: true,
        schema: expect.objectContaining({ format: 'uuid' }),
      }),
    );
    const query = op('/api-keys', 'get').parameters as OpenAPIV3.ParameterObject[];
    expect(query).toContainEqual(expect.objectContaining({ name: 'org_id', in: 'query', required: false }));
  });

  it("takes the list routes' query parameters from their query classes, the state enum from KEY_STATES", () => {
    for (const path of ['/api-keys', '/orgs/{org_id}/api-keys']) {
      const params = op(path, 'get').parameters as OpenAPIV3.ParameterObject[];
      const state = params.find((p) => p.name === 'state')!;
      expect((state.schema as OpenAPIV3.SchemaObject).enum).toEqual([...KEY_STATES]);
    }
    const names = (op('/api-keys', 'get').parameters as OpenAPIV3.ParameterObject[]).map((p) => p.name);
    expect([...names].sort()).toEqual(['cursor', 'limit', 'org_id', 'state']);
  });

  it('describes the key record with the key only at mint and the lifecycle timestamps optional', () => {
    const listed = schema('ApiKey');
    const minted = schema('MintedApiKey');
    const always = ['id', 'org_id', 'name', 'lookup', 'last4', 'scopes', 'created_at'];
    // The newest version adds `state` to every record (the contract's version answers without it: versioning.test.ts).
    expect([...(listed.required ?? [])].sort()).toEqual([...always, 'state'].sort());
    expect(Object.keys(listed.properties!)).toEqual(
      expect.arrayContaining([...always, 'expires_at', 'last_used_at', 'revoked_at']),
    );
    expect(listed.properties).not.toHaveProperty('key');
    expect(minted.required).toEqual(expect.arrayContaining([...always, 'key']));
    const created = op('/api-keys', 'post').responses['201'] as OpenAPIV3.ResponseObject;
    expect(created.content!['application/json'].schema).toEqual({ $ref: '#/components/schemas/MintedApiKey' });
    const list = schema('ApiKeyList').properties!.keys as OpenAPIV3.ArraySchemaObject;
    expect(list.items).toEqual({ $ref: '#/components/schemas/ApiKey' });
    expect(op('/api-keys/{keyID}', 'delete').responses['204']).toBeDefined();
  });

  it('says the shape of every object it describes: properties, what each additional property holds, or its values', () => {
    // A bare { type: 'object' } becomes Record<string, never> in the generated client's types, and an
    // object of any additional properties and none of its own { [key: string]: unknown }: only what is
    // open by design says that (a key's metadata, an audit event's details).
    const OPEN_BY_DESIGN = /\/properties\/metadata$|^#\/components\/schemas\/AuditEvent\/properties\/details$/;
    const bare: string[] = [];
    const open: string[] = [];
    const visit = (node: unknown, at: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const s = node as Record<string, unknown>;
      if (s.type === 'object' && !('properties' in s) && !('enum' in s)) {
        const extra = s.additionalProperties;
        if (extra === undefined) bare.push(at);
        else if ((extra === true || Object.keys(extra as object).length === 0) && !OPEN_BY_DESIGN.test(at))
          open.push(at);
      }
      for (const [key, child] of Object.entries(s)) if (key !== 'example') visit(child, `${at}/${key}`);
    };
    visit(doc.paths, '#/paths');
    visit(doc.components!.schemas, '#/components/schemas');
    expect(bare).toEqual([]);
    expect(open).toEqual([]);
    const window = schema('RateWindow');
    expect(window.required).toEqual(['name', 'limit', 'window_seconds']);
    expect(window.properties!.window_seconds).toMatchObject({ type: 'integer', minimum: 1, maximum: 86400 });
    const rateLimits = schema('ApiKey').properties!.rate_limits as OpenAPIV3.ArraySchemaObject;
    expect(rateLimits.items).toEqual({ $ref: '#/components/schemas/RateWindow' });
    const request = schema('UpdateApiKeyRequest').properties!.rate_limits as OpenAPIV3.ArraySchemaObject;
    expect(request).toMatchObject({ nullable: true, maxItems: 5, items: { $ref: '#/components/schemas/RateWindow' } });
  });

  it("describes a key's credits: the record's with the next refill, the request's taking null even in a strict validator", () => {
    const credits = schema('Credits');
    expect(credits.required).toEqual(['remaining']);
    expect(Object.keys(credits.properties!)).toEqual(['remaining', 'refill', 'next_refill_at']);
    expect(credits.properties!.next_refill_at).toMatchObject({ type: 'string', format: 'date-time' });
    for (const record of ['ApiKey', 'OrgApiKey', 'ServiceKey', 'PersonalDataApiKey'])
      expect(schema(record).properties!.credits, record).toMatchObject({
        allOf: [{ $ref: '#/components/schemas/Credits' }],
      });
    const refill = schema('CreditRefill');
    expect(refill.required).toEqual(['amount', 'interval']);
    expect(refill.properties!.interval).toMatchObject({ enum: ['daily', 'monthly'] });
    expect(credits.properties!.refill).toMatchObject({ allOf: [{ $ref: '#/components/schemas/CreditRefill' }] });
    const setting = schema('CreditsSetting');
    expect(setting.required).toEqual(['remaining']);
    expect(Object.keys(setting.properties!)).toEqual(['remaining', 'refill']);
    // `nullable` beside a $ref lets no null through (the $ref's own type still applies): null is a branch of its own.
    for (const request of ['MintApiKeyRequest', 'UpdateApiKeyRequest', 'MintServiceKeyRequest'])
      expect((schema(request).properties!.credits as Schema).anyOf, request).toEqual([
        { $ref: '#/components/schemas/CreditsSetting' },
        { type: 'object', nullable: true, enum: [null] },
      ]);
  });

  it('describes the usage report with a nullable limit and the principal with its six fields', () => {
    const usage = schema('UsageReport');
    expect(usage.required).toEqual(
      expect.arrayContaining(['plan', 'mcp_queries', 'breakdown', 'imports', 'captures', 'resets_at']),
    );
    expect((usage.properties!.plan as Schema).enum).toEqual(['free', 'pro']);
    expect((schema('Meter').properties!.limit as Schema).nullable).toBe(true);
    const principal = schema('Principal');
    expect([...(principal.required ?? [])].sort()).toEqual([
      'email',
      'org_id',
      'org_member_count',
      'org_role',
      'scopes',
      'user_id',
    ]);
    expect((principal.properties!.org_member_count as Schema).type).toBe('integer');
  });

  it('serves /docs as an HTML page whose scripts and styles all load from the service itself', async () => {
    const page = await t.api.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const refs = [...page.text.matchAll(/<(?:script[^>]*\ssrc|link[^>]*\shref)=["']([^"']+)["']/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThanOrEqual(4);
    for (const ref of refs) {
      expect(ref, 'no absolute URL, no CDN').not.toMatch(/^(https?:)?\/\//);
      const asset = await t.api.get(new URL(ref, `${t.url}/docs`).pathname);
      expect(asset.status, ref).toBe(200);
    }
    const init = await t.api.get('/docs/swagger-ui-init.js');
    expect(init.headers.get('content-type')).toMatch(/javascript/);
    expect(init.text).toContain('mintApiKey');
    expect(init.text).not.toMatch(/https?:\/\/(?!localhost|127\.0\.0\.1)[a-z0-9.-]+\.[a-z]{2,}\//i);
  });
});
