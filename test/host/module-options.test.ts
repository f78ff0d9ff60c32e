import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { TypeOrmModule } from '@nestjs/typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeysService, ENTITIES, KeysUsageIdentityModule, UsageService, type Principal } from '../../src/index.js';
import { ApiClient } from '../support/http.js';
import { TestClock } from '../support/clock.js';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { DecisionsController, PLATFORMS, startHost, type HostApp } from './support/host-app.js';
import { NOWHERE, testSession } from '../support/factories.js';

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('KeysUsageIdentityModule options on %s', (platform) => {
  describe('routePrefix', () => {
    let host: HostApp;
    beforeAll(async () => {
      host = await startHost({ platform, databaseUrl: db.url, extras: { routePrefix: '/account/' } });
    });
    afterAll(async () => host?.close());

    it("moves every route of the module under the prefix and leaves the host's routes where they were", async () => {
      const w = await seed.world('owner');
      const minted = await host.api.post('/account/api-keys', w.session, {
        org_id: w.orgId,
        scopes: ['decisions:write'],
      });
      expect(minted.status).toBe(201);
      const key: string = minted.body.key;

      expect((await host.api.get('/account/me', key)).status).toBe(200);
      expect((await host.api.get('/account/usage', key)).status).toBe(403); // a write-only key lacks decisions:read
      expect((await host.api.get('/account/api-keys', w.session)).body.keys).toHaveLength(1);
      expect((await host.api.delete(`/account/api-keys/${minted.body.id}`, w.session)).status).toBe(204);

      for (const path of ['/api-keys', '/me', '/usage']) expect((await host.api.get(path, w.session)).status).toBe(404);
      expect((await host.api.get('/health')).status).toBe(200);
      expect((await host.api.post('/decisions', w.session, {})).status).toBe(201);
    });
  });

  describe('mountControllers: false', () => {
    let host: HostApp;
    const clock = new TestClock('2031-03-14T12:00:00.000Z');
    beforeAll(async () => {
      host = await startHost({ platform, databaseUrl: db.url, clock, extras: { mountControllers: false } });
    });
    afterAll(async () => host?.close());

    it('mounts no route of the module at all', async () => {
      const w = await seed.world('owner');
      for (const [method, path] of [
        ['POST', '/api-keys'],
        ['GET', '/api-keys'],
        ['DELETE', `/api-keys/${NOWHERE}`],
        ['GET', '/usage'],
        ['GET', '/me'],
      ]) {
        const res = await host.api.request(method, path, {
          token: w.session,
          body: method === 'POST' ? { org_id: w.orgId } : undefined,
        });
        expect(res.status, `${method} ${path}`).toBe(404);
      }
    });

    it('still verifies keys and charges meters on host routes, with keys minted and usage read through the exported services', async () => {
      const w = await seed.world('owner');
      const principal: Principal = testSession({ userId: w.userId, email: w.email });
      const minted = await host.app
        .get(ApiKeysService)
        .mint(principal, { org_id: w.orgId, scopes: ['decisions:write'] });
      expect(minted.key).toMatch(/^svc_live_/);

      expect((await host.api.post('/decisions', minted.key, { title: 'ok' })).status).toBe(201);
      const report = await host.app.get(UsageService).report({ ...principal, orgId: w.orgId, plan: 'free' });
      expect(report.captures).toEqual({ used: 1, limit: 2 });
    });
  });

  describe('authFailureLimit', () => {
    let host: HostApp;
    // Failure counts are shared through the database: each platform fails in a window of its own.
    const clock = new TestClock(`2031-03-14T12:0${PLATFORMS.indexOf(platform)}:00.000Z`);
    beforeAll(async () => {
      host = await startHost({ platform, databaseUrl: db.url, clock, authFailureLimit: 2 });
    });
    afterAll(async () => host?.close());

    it("throttles an address after repeated failures on the host's guarded route with 429 and Retry-After, then lets it try again", async () => {
      for (let i = 0; i < 2; i++) expect((await host.api.post('/decisions', 'not-a-credential', {})).status).toBe(401);
      const throttled = await host.api.post('/decisions', 'not-a-credential', {});
      expect(throttled.status).toBe(429);
      expect(throttled.headers.get('retry-after')).toBe('60');
      expect(throttled.body).toEqual({
        statusCode: 429,
        error: 'Too Many Requests',
        message: expect.stringContaining('failed authentication'),
        budget: 'auth_failures',
        retry_after: 60,
      });
      expect((await host.api.get('/health')).status).toBe(200);

      clock.advance(60_000);
      const w = await seed.world('owner');
      expect((await host.api.post('/decisions', w.session, {})).status).toBe(201);
    });
  });

  describe('without apiKeySecret', () => {
    let host: HostApp;
    beforeAll(async () => {
      host = await startHost({ platform, databaseUrl: db.url, apiKeySecret: null });
    });
    afterAll(async () => host?.close());

    it('answers the key lifecycle with a 501 JSON body and still accepts sessions on host routes', async () => {
      const w = await seed.world('owner');
      const res = await host.api.post('/api-keys', w.session, { org_id: w.orgId });
      expect(res.status).toBe(501);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(res.body).toEqual({
        statusCode: 501,
        error: 'Not Implemented',
        message: 'API keys are not configured on this deployment',
      });
      expect((await host.api.post('/decisions', w.session, {})).status).toBe(201);
    });
  });
});

describe.each(PLATFORMS)('KeysUsageIdentityModule.forRoot with isGlobal: false on %s', (platform) => {
  // The host keeps the module inside its own SecurityModule and hands it on by re-exporting it.
  function hostWith(featureImportsSecurity: boolean) {
    @Module({
      imports: [
        KeysUsageIdentityModule.forRoot({
          apiKeySecret: TEST_API_KEY_SECRET,
          session: { secret: TEST_SESSION_SECRET },
          authFailureLimit: 0,
          isGlobal: false,
        }),
      ],
      exports: [KeysUsageIdentityModule],
    })
    class SecurityModule {}

    @Module({ imports: featureImportsSecurity ? [SecurityModule] : [], controllers: [DecisionsController] })
    class FeatureModule {}

    // The refused app is never closed (create rejects): it must open no connection that the
    // database drop at the end would then break under a pool nobody listens to.
    const typeorm = TypeOrmModule.forRoot({
      type: 'postgres',
      url: db.url,
      entities: [...ENTITIES],
      extra: { max: 2 },
      manualInitialization: !featureImportsSecurity,
    });
    @Module({ imports: [typeorm, SecurityModule, FeatureModule] })
    class RootModule {}
    return RootModule;
  }

  const create = (featureImportsSecurity: boolean) =>
    NestFactory.create(
      hostWith(featureImportsSecurity),
      platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(),
      {
        logger: false,
        abortOnError: false,
      },
    );

  it('serves the guards to a feature module that imports the re-exporting module', async () => {
    const app: INestApplication = await create(true);
    try {
      await app.listen(0, '127.0.0.1');
      const api = new ApiClient(`http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`);
      const w = await seed.world('owner');
      const minted = await api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:write'] });
      expect(minted.status).toBe(201);
      expect((await api.post('/decisions', minted.body.key, {})).status).toBe(201);
      expect((await api.post('/decisions', undefined, {})).status).toBe(401);
    } finally {
      await app.close();
    }
  });

  it('refuses to start a feature module that uses the decorators without importing it, naming the missing provider', async () => {
    await expect(create(false)).rejects.toThrow(/CredentialGuard.*FeatureModule/s);
  });
});
