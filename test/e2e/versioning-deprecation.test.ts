import 'reflect-metadata';
import { Controller, Get, Logger, Module, Query } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiOperation, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SessionOrgResolver } from '../../src/auth/session-org.resolver.js';
import type { CoherenceLease } from '../../src/coherence/coherence-lease.js';
import { DeprecationUsage, type DeprecatedUse } from '../../src/versioning/deprecation-usage.js';
import type { Deprecation } from '../../src/versioning/deprecations.js';
import { OrgVersionCache } from '../../src/versioning/org-version.cache.js';
import type { OrgVersionRepository } from '../../src/versioning/org-version.repository.js';
import { API_VERSIONS } from '../../src/versioning/api-versions.js';
import { VersionEdge } from '../../src/versioning/version-edge.js';
import { installVersioning, operationIdsByRoute } from '../../src/http/versioning-hooks.js';
import { VersioningPolicy } from '../../src/versioning/versioning-policy.js';
import { TestClock, testSettings } from '../support/factories.js';

@Controller('widgets')
class WidgetsController {
  @Get()
  @ApiOperation({ operationId: 'listWidgets' })
  list(@Query('colour') _colour?: string) {
    return { widgets: [] };
  }

  @Get('legacy')
  @ApiOperation({ operationId: 'legacyWidgets' })
  legacy() {
    return { widgets: [] };
  }
}

@Module({ controllers: [WidgetsController] })
class WidgetsModule {}

const DEPRECATED_AT = new Date('2027-01-01T00:00:00Z');
const SUNSET_AT = new Date('2027-07-01T00:00:00Z');
const DEPRECATIONS: Deprecation[] = [
  {
    target: { operationId: 'legacyWidgets' },
    deprecatedAt: DEPRECATED_AT,
    sunsetAt: SUNSET_AT,
    replacement: 'use GET /widgets instead.',
    link: '/docs/changelog#legacy',
  },
  {
    target: { operationId: 'listWidgets', parameter: 'colour' },
    deprecatedAt: DEPRECATED_AT,
    sunsetAt: SUNSET_AT,
    replacement: 'filter with ?color= instead.',
    link: '/docs/changelog#colour',
  },
  {
    target: { version: '2026-11-01' },
    deprecatedAt: DEPRECATED_AT,
    sunsetAt: new Date('2027-09-01T00:00:00Z'),
    replacement: 'use 2026-11-26.',
    link: '/docs/changelog#v2026-11-01',
  },
];

/**
 * Deprecation and sunset through the real Fastify hooks (src/http/versioning-hooks.ts) on a real
 * app: the routes are a test's own (nothing in the service is deprecated today), the clock a TestClock.
 */
describe('deprecated operations, parameters and versions', () => {
  const clock = new TestClock('2027-02-01T12:00:00Z');
  const uses: DeprecatedUse[] = [];
  let app: NestFastifyApplication;
  let url: string;
  const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);

  beforeAll(async () => {
    const usage = new DeprecationUsage();
    usage.onUse((u) => uses.push(u));
    // No request here carries a principal, so no pin is ever read.
    const pins = new OrgVersionCache(
      { onInvalidate: () => undefined } as Partial<CoherenceLease> as CoherenceLease,
      {} as OrgVersionRepository,
    );
    // No version change: the service's own name operations this app does not have.
    const policy = new VersioningPolicy(API_VERSIONS, [], DEPRECATIONS);
    app = await NestFactory.create<NestFastifyApplication>(WidgetsModule, new FastifyAdapter(), { logger: false });
    const edge = new VersionEdge(policy, pins, usage, testSettings({ clock }), {} as SessionOrgResolver);
    const operations = operationIdsByRoute(SwaggerModule.createDocument(app, new DocumentBuilder().build()));
    app
      .getHttpAdapter()
      .getInstance()
      .addHook('onSend', installVersioning(app.getHttpAdapter().getInstance(), edge, operations));
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    warn.mockRestore();
    await app?.close();
  });

  const get = (path: string, version = '2026-11-26') => fetch(url + path, { headers: { 'Api-Version': version } });

  it('marks a deprecated operation with Deprecation, Sunset and Link, and counts the use', async () => {
    uses.length = 0;
    const res = await get('/widgets/legacy');
    expect(res.status).toBe(200);
    expect(res.headers.get('deprecation')).toBe(`@${DEPRECATED_AT.getTime() / 1000}`);
    expect(res.headers.get('sunset')).toBe('Thu, 01 Jul 2027 00:00:00 GMT');
    expect(res.headers.get('link')).toBe('</docs/changelog#legacy>; rel="deprecation"; type="text/html"');
    expect(uses).toEqual([{ orgId: null, target: 'legacyWidgets', version: '2026-11-26' }]);
    expect(warn).toHaveBeenCalledWith(
      expect.stringContaining('deprecated legacyWidgets used by org (none) with API version 2026-11-26'),
    );
  });

  it('marks a deprecated parameter only when the request uses it', async () => {
    const plain = await get('/widgets');
    expect(plain.headers.get('deprecation')).toBeNull();
    const used = await get('/widgets?colour=red');
    expect(used.status).toBe(200);
    expect(used.headers.get('link')).toContain('#colour');
  });

  it('marks every answer of a deprecated version', async () => {
    const res = await get('/widgets', '2026-11-01');
    expect(res.headers.get('api-version')).toBe('2026-11-01');
    expect(res.headers.get('sunset')).toBe('Wed, 01 Sep 2027 00:00:00 GMT');
  });

  it('answers 410 past the sunset, saying what replaced it', async () => {
    clock.set('2027-07-01T00:00:00Z');
    const res = await get('/widgets/legacy');
    expect(res.status).toBe(410);
    const body = (await res.json()) as { message: string };
    expect(body.message).toBe('This operation was removed on 2027-07-01: use GET /widgets instead.');
    const param = await get('/widgets?colour=red');
    expect(param.status).toBe(410);
    expect(((await param.json()) as { message: string }).message).toContain(
      'The colour parameter was removed on 2027-07-01: filter with ?color= instead.',
    );
    expect((await get('/widgets')).status).toBe(200);
  });

  it('refuses a sunset version asked for by header, and serves orgs pinned to it the oldest supported one', async () => {
    clock.set('2027-09-02T00:00:00Z');
    const res = await get('/widgets', '2026-11-01');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toBe(
      'Api-Version header "2026-11-01" is no longer supported (past its sunset); versions: 2026-11-26, 2026-11-27',
    );
    const unpinned = await fetch(`${url}/widgets`);
    expect(unpinned.headers.get('api-version')).toBe('2026-11-26');
  });
});

describe('the operations versioning names', () => {
  it('must all be routes of the app: a renamed operationId stops the start', async () => {
    const pins = new OrgVersionCache(
      { onInvalidate: () => undefined } as Partial<CoherenceLease> as CoherenceLease,
      {} as OrgVersionRepository,
    );
    const policy = new VersioningPolicy(
      API_VERSIONS,
      [],
      [{ ...DEPRECATIONS[0], target: { operationId: 'renamedWidgets' } }],
    );
    const app = await NestFactory.create<NestFastifyApplication>(WidgetsModule, new FastifyAdapter(), {
      logger: false,
    });
    try {
      const edge = new VersionEdge(policy, pins, new DeprecationUsage(), testSettings(), {} as SessionOrgResolver);
      const operations = operationIdsByRoute(SwaggerModule.createDocument(app, new DocumentBuilder().build()));
      expect(() => installVersioning(app.getHttpAdapter().getInstance(), edge, operations)).toThrow(
        /names operations no route has .*: renamedWidgets/,
      );
    } finally {
      await app.close();
    }
  });
});
