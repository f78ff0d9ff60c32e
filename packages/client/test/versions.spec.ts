import { describe, expect, it } from 'vitest';
import { declaredVersions } from '../../../scripts/openapi-versions.mjs';
import { API_VERSIONS, FALLBACK_API_VERSION, LATEST_API_VERSION } from '../src/api-version.js';

describe('the API versions the client is built with', () => {
  it('come from info.x-api-versions, oldest first', () => {
    expect(declaredVersions({ info: { 'x-api-versions': ['2026-11-26', '2026-11-01'] }, paths: {} })).toEqual([
      '2026-11-01',
      '2026-11-26',
    ]);
  });

  it('else from the enum of an Api-Version header parameter', () => {
    const parameter = { in: 'header', name: 'Api-Version', schema: { enum: ['2026-12-01', '2026-11-01'] } };
    const document = {
      info: {},
      paths: {
        '/me': { get: { parameters: [parameter] } },
        '/usage': { get: { parameters: [{ in: 'query', name: 'api-version', schema: { enum: ['x'] } }] } },
      },
    };
    expect(declaredVersions(document)).toEqual(['2026-11-01', '2026-12-01']);
  });

  it('else none; the client always knows the first version, 2026-11-01, and sends the newest it knows', () => {
    expect(declaredVersions({ info: {}, paths: { '/me': { get: {} } } })).toEqual([]);
    expect(LATEST_API_VERSION).toBe(API_VERSIONS.at(-1));
    expect(API_VERSIONS).toContain(FALLBACK_API_VERSION);
    expect([...API_VERSIONS].sort()).toEqual(API_VERSIONS);
  });
});
