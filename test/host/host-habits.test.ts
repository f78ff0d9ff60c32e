// Habits of host monoliths (issue 13), each on Express and Fastify: a request-scoped directory,
// a default-deny global guard, Swagger, forRoot/forFeature, decorator placement.
import {
  Catch,
  ClassSerializerInterceptor,
  Controller,
  Get,
  Inject,
  Injectable,
  Module,
  Post,
  Scope,
  SetMetadata,
  UnauthorizedException,
  ValidationPipe,
  type ArgumentsHost,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import {
  APP_FILTER,
  APP_GUARD,
  APP_INTERCEPTOR,
  APP_PIPE,
  BaseExceptionFilter,
  REQUEST,
  Reflector,
} from '@nestjs/core';
import { ApiOkResponse, ApiProperty, ApiSchema, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addKeysUsageIdentitySecurity,
  Authenticated,
  AuthMetrics,
  Charges,
  CurrentPrincipal,
  isKeysUsageIdentityRoute,
  KeysUsageIdentityModule,
  RequireScopes,
  TypeOrmOrgDirectory,
  UsageService,
  type Principal,
} from '../../src/index.js';
import { createSeededDatabase, databaseUrl, useEmptyDatabase, type TestDatabase } from '../support/database.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { PLATFORMS, startHost, type HostApp } from './support/host-app.js';

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

async function mintKey(
  host: HostApp,
  scopes: string[],
  world?: { session: string; orgId: string },
): Promise<{ key: string; id: string; orgId: string }> {
  const w = world ?? (await seed.world('owner'));
  const res = await host.api.post('/api-keys', w.session, { org_id: w.orgId, scopes });
  expect(res.status).toBe(201);
  return { key: res.body.key, id: res.body.id, orgId: w.orgId };
}

/** A tenancy-style directory built per request. */
@Injectable({ scope: Scope.REQUEST })
class RequestScopedDirectory extends TypeOrmOrgDirectory {}

/** A directory that is a singleton by declaration but injects the request, which makes it request-scoped. */
@Injectable()
class RequestReadingDirectory extends TypeOrmOrgDirectory {
  constructor(
    @InjectDataSource() db: DataSource,
    @Inject(REQUEST) readonly request: unknown,
  ) {
    super(db);
  }
}

// The host's default-deny guard: everything needs the host's own auth unless marked @Public().
const IS_PUBLIC = 'host:isPublic';
const Public = () => SetMetadata(IS_PUBLIC, true);

@Injectable()
class HostDefaultDenyGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}
  canActivate(ctx: ExecutionContext): boolean {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [ctx.getHandler(), ctx.getClass()])) return true;
    // The documented way through: routes guarded by the module keep their own credential checks.
    if (isKeysUsageIdentityRoute(ctx)) return true;
    throw new UnauthorizedException('host auth required');
  }
}

@Controller('host')
class HostRoutesController {
  @Get('open')
  @Public()
  open(): { open: true } {
    return { open: true };
  }

  @Get('closed')
  closed(): { closed: true } {
    return { closed: true };
  }
}

// A controller-level declaration with a route-level one under it.
@Controller('reports')
@Authenticated()
class ReportsController {
  @Get()
  @RequireScopes('decisions:read')
  list(@CurrentPrincipal() principal: Principal): { org_id: string | null } {
    return { org_id: principal.orgId };
  }
}

// The host's own error schema, which ours must not overwrite.
@ApiSchema({ name: 'Error' })
class HostError {
  @ApiProperty()
  code: string;

  @ApiProperty()
  detail: string;
}

@Controller('notes')
class NotesController {
  @Get()
  @ApiOkResponse({ type: HostError })
  notes(): unknown[] {
    return [];
  }
}

// A host feature module that needs the guards and charging but must not mount a second copy.
@Controller('imports')
class ImportsController {
  @Post()
  @RequireScopes('decisions:write')
  @Charges('imports')
  run(@CurrentPrincipal() principal: Principal): { org_id: string | null } {
    return { org_id: principal.orgId };
  }
}

@Module({ imports: [KeysUsageIdentityModule.forFeature()], controllers: [ImportsController] })
class ImportsFeatureModule {}

// The same feature module written wrongly: a second forRoot.
@Module({
  imports: [
    KeysUsageIdentityModule.forRoot({ apiKeySecret: TEST_API_KEY_SECRET, session: { secret: TEST_SESSION_SECRET } }),
  ],
  controllers: [ImportsController],
})
class SecondRootFeatureModule {}

/** The host filter Nest's docs show: observe every error, then let Nest's default answer. */
@Catch()
class HostLoggingFilter extends BaseExceptionFilter {
  static seen = 0;
  override catch(exception: unknown, host: ArgumentsHost): void {
    HostLoggingFilter.seen++;
    super.catch(exception, host);
  }
}

describe.each(PLATFORMS)('a host on %s', (platform) => {
  describe('with a global ValidationPipe({ whitelist, forbidNonWhitelisted, transform }), its own exception filter and ClassSerializerInterceptor', () => {
    let plain: HostApp;
    let strict: HostApp;
    beforeAll(async () => {
      plain = await startHost({ platform, databaseUrl: db.url });
      strict = await startHost({
        platform,
        databaseUrl: db.url,
        hostProviders: [
          {
            provide: APP_PIPE,
            useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }),
          },
          { provide: APP_FILTER, useClass: HostLoggingFilter },
          { provide: APP_INTERCEPTOR, useClass: ClassSerializerInterceptor },
        ],
      });
    });
    afterAll(async () => {
      await plain?.close();
      await strict?.close();
    });

    it('answers every request of our contract exactly as a host without them does', async () => {
      const w = await seed.world('owner');
      const { key } = await mintKey(plain, ['decisions:read']);
      const requests: Array<[string, string, string | undefined, unknown]> = [
        ['POST', '/api-keys', w.session, { org_id: 'nope' }],
        ['POST', '/api-keys', w.session, { org_id: w.orgId, colour: 'red' }],
        ['POST', '/api-keys', w.session, { org_id: w.orgId, name: 'x'.repeat(101) }],
        ['POST', '/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:admin'] }],
        ['POST', '/api-keys', w.session, { org_id: w.orgId, expires_in_days: '5' }],
        ['POST', '/api-keys', w.session, undefined],
        ['GET', `/api-keys?org_id=${w.orgId}&_=1700000000`, w.session, undefined],
        ['GET', '/api-keys?org_id=not-a-uuid', w.session, undefined],
        ['GET', '/api-keys?cachebuster=1', w.session, undefined],
        ['DELETE', '/api-keys/not-a-uuid', w.session, undefined],
        ['GET', '/me?verbose=1', key, undefined],
        ['GET', '/usage?x=1', key, undefined],
        ['GET', '/api-keys', key, undefined],
      ];
      const before = HostLoggingFilter.seen;
      for (const [method, path, token, body] of requests) {
        const a = await plain.api.request(method, path, { token, body });
        const b = await strict.api.request(method, path, { token, body });
        expect(b.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(a.status);
        expect(b.body, `${method} ${path} ${JSON.stringify(body)}`).toEqual(a.body);
      }
      // The host's filter did see our errors (it is in force), and changed nothing.
      expect(HostLoggingFilter.seen).toBeGreaterThan(before);
      // The host's pipe does apply to its own routes.
      expect((await strict.api.post('/echo', undefined, { anything: 1 })).status).toBe(200);
    });

    it('answers the routes beside the contract (history, audit log, orgs, org keys) exactly as a host without them does', async () => {
      const w = await seed.world('owner');
      const { id } = await mintKey(plain, ['decisions:read'], w);
      const today = new Date().toISOString().slice(0, 10);
      const requests: Array<[string, string]> = [
        ['GET', `/usage/daily?from=${today}&to=${today}&_=1700000000`],
        ['GET', '/usage/daily?from=2026-13-01'],
        ['GET', `/api-keys/${id}/usage?to=tomorrow&cachebuster=1`],
        ['GET', `/api-keys/${id}/usage?from=${today}&colour=red`],
        ['GET', '/orgs?limit=0'],
        ['GET', '/orgs?limit=2&_=1'],
        ['GET', `/orgs/${w.orgId}/members?limit=abc`],
        ['GET', `/orgs/${w.orgId}/members?x=1`],
        ['GET', `/orgs/${w.orgId}/audit-events?action=api_key.stolen`],
        ['GET', `/orgs/${w.orgId}/audit-events?limit=5&verbose=1`],
        ['GET', `/orgs/${w.orgId}/api-keys?state=weird`],
        ['GET', `/orgs/${w.orgId}/api-keys?state=active&_=1`],
        ['GET', `/orgs/${w.orgId}/api-keys/${id}/usage?from=${today}&x=1`],
      ];
      for (const [method, path] of requests) {
        const a = await plain.api.request(method, path, { token: w.session });
        const b = await strict.api.request(method, path, { token: w.session });
        expect(b.status, `${method} ${path}`).toBe(a.status);
        expect(b.body, `${method} ${path}`).toEqual(a.body);
      }
    });

    it('mints the same record through both', async () => {
      const w = await seed.world('owner');
      const a = await plain.api.post('/api-keys', w.session, {
        org_id: w.orgId,
        name: 'ci',
        scopes: ['decisions:read'],
      });
      const b = await strict.api.post('/api-keys', w.session, {
        org_id: w.orgId,
        name: 'ci',
        scopes: ['decisions:read'],
      });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(Object.keys(b.body).sort()).toEqual(Object.keys(a.body).sort());
      expect({ ...b.body, id: null, key: null, prefix: null, lookup: null, last4: null, created_at: null }).toEqual({
        ...a.body,
        id: null,
        key: null,
        prefix: null,
        lookup: null,
        last4: null,
        created_at: null,
      });
    });
  });

  describe("with its DataSource in the Postgres schema 'app'", () => {
    const { name } = useEmptyDatabase('app');
    let pool: pg.Pool;
    beforeAll(async () => {
      // The test's own connections resolve tables in 'app', as the host's must.
      pool = new pg.Pool({ connectionString: databaseUrl(name), max: 2, options: '-c search_path=app' });
      pool.on('error', () => {});
      await pool.query('CREATE SCHEMA app');
    });
    afterAll(async () => {
      await pool?.end();
    });

    it("runs the host's migrations into 'app', refuses to boot until the connections resolve tables there, then serves", async () => {
      // The schema alone: migrations land in 'app', and the boot says what else to set.
      await expect(
        startHost({ platform, databaseUrl: databaseUrl(name), dataSource: { schema: 'app' } }),
      ).rejects.toThrow(/schema is "app" but its connections resolve unqualified tables in "public".*search_path=app/s);
      const tables = await pool.query<{ schemaname: string; tablename: string }>(
        `SELECT schemaname, tablename FROM pg_tables WHERE schemaname IN ('app', 'public') ORDER BY 1, 2`,
      );
      expect(tables.rows.map((r) => `${r.schemaname}.${r.tablename}`)).toEqual(
        [
          'api_key_counts',
          'api_key_scope_usage',
          'api_key_stale_warnings',
          'api_key_verification_days',
          'api_key_verification_hours',
          'api_keys',
          'audit_events',
          'auth_failure_counts',
          'cache_leases',
          'event_marks',
          'event_outbox',
          'key_rate_windows',
          'memberships',
          'migrations',
          'org_key_policies',
          'orgs',
          'usage_attribution',
          'usage_counters',
          'usage_leases',
          'usage_meter_attribution',
          'usage_meter_counters',
          'users',
          'verification_invalidations',
          'webhook_deliveries',
          'webhook_endpoints',
          'workspaces',
        ].map((t) => `app.${t}`),
      );

      const host = await startHost({
        platform,
        databaseUrl: databaseUrl(name),
        dataSource: { schema: 'app', extra: { max: 4, options: '-c search_path=app' } },
      });
      try {
        const w = await new Seeder(pool).world('owner');
        const minted = await host.api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:write'] });
        expect(minted.status).toBe(201);
        expect((await host.api.get('/me', minted.body.key)).body).toMatchObject({ org_id: w.orgId, user_id: w.userId });
        expect((await host.api.post('/decisions', minted.body.key, { title: 'in app' })).status).toBe(201);
        await host.app.get(UsageService, { strict: false }).settle(); // leased charging writes counts behind the answer
        expect(
          (await pool.query(`SELECT captures FROM app.usage_counters WHERE org_id = $1`, [w.orgId])).rows[0].captures,
        ).toBe(1);
      } finally {
        await host.close();
      }
    });
  });

  describe('with a request-scoped OrgDirectory', () => {
    it('is refused at boot with a message that says what to do (instead of a 500 on every authenticated request)', async () => {
      for (const orgDirectory of [RequestScopedDirectory, RequestReadingDirectory]) {
        await expect(startHost({ platform, databaseUrl: db.url, orgDirectory })).rejects.toThrow(
          /orgDirectory is request-scoped.*must be a singleton.*AsyncLocalStorage/s,
        );
      }
    });
  });

  describe('that imports forRoot twice', () => {
    it('is refused at boot, naming forFeature()', async () => {
      // Refused while the app is built, so nothing can close it: it opens no database connection.
      const dataSource = { manualInitialization: true };
      await expect(
        startHost({ platform, databaseUrl: db.url, hostImports: [SecondRootFeatureModule], dataSource }),
      ).rejects.toThrow(/forRoot\(\)\/forRootAsync\(\) is imported 2 times.*KeysUsageIdentityModule\.forFeature\(\)/s);
    });
  });

  describe('with isGlobal: false, a default-deny global guard, and a feature module on forFeature()', () => {
    let host: HostApp;
    beforeAll(async () => {
      host = await startHost({
        platform,
        databaseUrl: db.url,
        extras: { isGlobal: false },
        hostProviders: [{ provide: APP_GUARD, useClass: HostDefaultDenyGuard }],
        hostControllers: [HostRoutesController, ReportsController],
        hostImports: [ImportsFeatureModule],
      });
    });
    afterAll(async () => host?.close());

    it("lets the module's own routes and the host routes that use its decorators through the host's guard, and keeps the rest closed", async () => {
      const { key, orgId } = await mintKey(host, ['decisions:read', 'decisions:write']);
      expect((await host.api.get('/me', key)).status).toBe(200);
      expect((await host.api.get('/usage', key)).status).toBe(200);
      expect((await host.api.get('/reports', key)).body).toEqual({ org_id: orgId });
      // Our credential checks still apply behind the host's guard.
      expect((await host.api.get('/me')).status).toBe(401);
      expect((await host.api.get('/me')).headers.get('www-authenticate')).toBe('Bearer');

      expect((await host.api.get('/host/open')).status).toBe(200);
      const closed = await host.api.get('/host/closed', key);
      expect(closed.status).toBe(401);
      expect(closed.body).toMatchObject({ message: 'host auth required' });
    });

    it('gives a feature module that imports forFeature() the guards and the charging of the one root', async () => {
      const { key, orgId } = await mintKey(host, ['decisions:write']);
      const res = await host.api.post('/imports', key, {});
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ org_id: orgId });
      await host.app.get(UsageService, { strict: false }).settle();
      const { rows } = await db.pool.query(`SELECT imports FROM usage_counters WHERE org_id = $1`, [orgId]);
      expect(rows[0].imports).toBe(1);
      expect((await host.api.post('/imports', (await mintKey(host, ['decisions:read'])).key, {})).status).toBe(403);
    });

    it('verifies the credential once per request when a controller-level and a route-level decorator are both present', async () => {
      const metrics = host.app.get(AuthMetrics, { strict: false });
      const { key } = await mintKey(host, ['decisions:read']);
      const before = metrics.counts.ok;
      expect((await host.api.get('/reports', key)).status).toBe(200);
      expect(metrics.counts.ok - before).toBe(1);

      // The route-level scope still binds: a key without it is refused by the second declaration.
      const { key: writeOnly } = await mintKey(host, ['decisions:write']);
      expect((await host.api.get('/reports', writeOnly)).status).toBe(403);
    });
  });

  describe("merged into the host's Swagger document", () => {
    let host: HostApp;
    beforeAll(async () => {
      host = await startHost({ platform, databaseUrl: db.url, hostControllers: [NotesController, ReportsController] });
    });
    afterAll(async () => host?.close());

    it("keeps the host's Error schema, declares the schemes our decorators name, and documents host routes with their security", () => {
      const config = addKeysUsageIdentitySecurity(
        new DocumentBuilder().setTitle('Host').addBearerAuth(undefined, 'hostJwt'),
      ).build();
      const doc = SwaggerModule.createDocument(host.app, config);
      const schemas = doc.components!.schemas as Record<string, { properties?: Record<string, unknown> }>;
      expect(Object.keys(schemas.Error.properties!).sort()).toEqual(['code', 'detail']);
      expect(schemas.KuiError.properties).toHaveProperty('statusCode');

      const schemes = doc.components!.securitySchemes!;
      expect(Object.keys(schemes).sort()).toEqual(['apiKey', 'hostJwt', 'session']);
      // Every scheme an operation names is declared in the document.
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(
          item as Record<string, { security?: Array<Record<string, unknown>> }>,
        )) {
          for (const requirement of op.security ?? []) {
            for (const name of Object.keys(requirement)) expect(schemes, `${method} ${path}`).toHaveProperty(name);
          }
        }
      }
      expect(doc.paths['/decisions'].post!.security).toEqual([{ session: [] }, { apiKey: [] }]);
      expect(doc.paths['/reports'].get!.security).toEqual(expect.arrayContaining([{ session: [] }, { apiKey: [] }]));
      expect(doc.paths['/api-keys'].post!.security).toEqual([{ session: [] }]);
      expect(doc.paths['/notes'].get!.security).toBeUndefined();
    });
  });
});

describe('a host whose schema is built by TypeORM’s synchronize instead of the migrations', () => {
  const { name } = useEmptyDatabase('sync');

  it('is refused at boot with a message that says to run the migrations (instead of a 500 on every @Charges route)', async () => {
    const boot = startHost({
      platform: 'fastify',
      databaseUrl: databaseUrl(name),
      dataSource: { synchronize: true, migrationsRun: false, uuidExtension: 'pgcrypto' },
    });
    await expect(boot).rejects.toThrow(
      /lacks kui_charge_batch, kui_charge_meter_batch, kui_lease_meters, kui_count_meters, kui_count_api_keys, kui_notify_verification.*Run the migrations: add MIGRATIONS/s,
    );

    // synchronize did build the tables: what the check caught is what only the migrations add.
    const pool = new pg.Pool({ connectionString: databaseUrl(name), max: 1 });
    try {
      const tables = await pool.query(
        `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('usage_counters', 'api_keys')`,
      );
      expect(tables.rows[0].n).toBe(2);
    } finally {
      await pool.end();
    }
  });
});
