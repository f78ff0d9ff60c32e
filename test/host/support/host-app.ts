import 'reflect-metadata';
import {
  Body,
  Controller,
  Get,
  HttpCode,
  Injectable,
  Module,
  Post,
  type DynamicModule,
  type INestApplication,
  type Provider,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
// Everything the host uses comes from the package's public entry, as `from 'keys-usage-identity'` would.
import {
  Charges,
  CurrentPrincipal,
  ENTITIES,
  KeysUsageIdentityModule,
  MIGRATIONS,
  RequireScopes,
  type Clock,
  type KeysUsageIdentityExtras,
  type MeterRegistryInput,
  type OrgDirectory,
  type PlanLimits,
  type Principal,
  type ScopeRegistryInput,
} from '../../../src/index.js';
import { ApiClient } from '../../support/http.js';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../../support/seed.js';

export type Platform = 'express' | 'fastify';
export const PLATFORMS: Platform[] = ['express', 'fastify'];

/** Small limits so a test exhausts a meter in a couple of requests. */
export const HOST_PLAN_LIMITS: PlanLimits = {
  free: { wallet: 5, imports: 2, captures: 2 },
  pro: { wallet: null, imports: 100, captures: 100 },
};

/** The host's own configuration service, the kind `forRootAsync({ inject })` reads. */
@Injectable()
export class HostSettings {
  databaseUrl = '';
  apiKeySecret: string | null = TEST_API_KEY_SECRET;
  sessionSecret = TEST_SESSION_SECRET;
  planLimits: PlanLimits = HOST_PLAN_LIMITS;
  authFailureLimit = 0;
  clock: Clock | undefined;
  scopes: ScopeRegistryInput | undefined;
  meters: MeterRegistryInput | undefined;
}

/** The host's own routes: one guarded and charged, the others ours to leave alone. */
@Controller('decisions')
export class DecisionsController {
  @Post()
  @RequireScopes('decisions:write')
  @Charges('captures')
  capture(
    @CurrentPrincipal() principal: Principal,
    @Body() body: { title?: unknown },
  ): { captured: unknown; org_id: string | null; by: string } {
    return { captured: body?.title ?? null, org_id: principal.orgId, by: principal.kind };
  }
}

@Controller()
export class HostPublicController {
  @Get('health')
  health(): { ok: true } {
    return { ok: true };
  }

  @Post('echo')
  @HttpCode(200)
  echo(@Body() body: unknown): unknown {
    return { echoed: body };
  }
}

/** A route that names a scope nobody registered: a host that declares it must not start. */
@Controller('exports')
export class ExportsController {
  @Get()
  @RequireScopes('exports:run')
  run(): { ok: true } {
    return { ok: true };
  }
}

/** A host feature module: the guards and the interceptor come from forFeature() (also what `isGlobal: false` needs). */
@Module({ imports: [KeysUsageIdentityModule.forFeature()], controllers: [DecisionsController] })
export class DecisionsModule {}

export interface HostOptions {
  platform: Platform;
  databaseUrl: string;
  apiKeySecret?: string | null;
  clock?: Clock;
  planLimits?: PlanLimits;
  /** The host's own scopes (the module option `scopes`). */
  scopes?: ScopeRegistryInput;
  /** The host's own meters (the module option `meters`). */
  meters?: MeterRegistryInput;
  /** Failed authentications per address per minute before 429 (default 0: off, so tests may fail often). */
  authFailureLimit?: number;
  extras?: KeysUsageIdentityExtras;
  /** Modules the host's own OrgDirectory needs (passed to `forRootAsync({ imports })`). */
  directoryImports?: Array<Type<unknown> | DynamicModule>;
  orgDirectory?: Type<OrgDirectory>;
  /** The host's own app-wide providers (APP_GUARD, APP_PIPE, APP_FILTER, APP_INTERCEPTOR) and extra controllers and modules. */
  hostProviders?: Provider[];
  hostControllers?: Array<Type<unknown>>;
  hostImports?: Array<Type<unknown> | DynamicModule>;
  /** Added to the host's TypeORM options (e.g. `schema`, `extra`). */
  dataSource?: Record<string, unknown>;
}

/** The host's root module, written as a host team would write it. */
export function hostModule(options: HostOptions): DynamicModule {
  const settings = new HostSettings();
  settings.databaseUrl = options.databaseUrl;
  if (options.apiKeySecret !== undefined) settings.apiKeySecret = options.apiKeySecret;
  if (options.planLimits) settings.planLimits = options.planLimits;
  if (options.authFailureLimit !== undefined) settings.authFailureLimit = options.authFailureLimit;
  settings.clock = options.clock;
  settings.scopes = options.scopes;
  settings.meters = options.meters;

  @Module({ providers: [{ provide: HostSettings, useValue: settings }], exports: [HostSettings] })
  class HostSettingsModule {}

  @Module({})
  class HostAppModule {}

  return {
    module: HostAppModule,
    imports: [
      HostSettingsModule,
      TypeOrmModule.forRootAsync({
        imports: [HostSettingsModule],
        inject: [HostSettings],
        useFactory: (s: HostSettings) => ({
          type: 'postgres',
          url: s.databaseUrl,
          entities: [...ENTITIES],
          migrations: [...MIGRATIONS],
          // The cloned test database is migrated already: this proves the host's run finds nothing to do.
          migrationsRun: true,
          extra: { max: 4 },
          ...options.dataSource,
        }),
      }),
      KeysUsageIdentityModule.forRootAsync({
        imports: [HostSettingsModule, ...(options.directoryImports ?? [])],
        inject: [HostSettings],
        useFactory: (s: HostSettings) => ({
          apiKeySecret: s.apiKeySecret,
          session: { secret: s.sessionSecret },
          planLimits: s.planLimits,
          authFailureLimit: s.authFailureLimit,
          clock: s.clock,
          scopes: s.scopes,
          meters: s.meters,
        }),
        ...options.extras,
        ...(options.orgDirectory ? { orgDirectory: options.orgDirectory } : {}),
      }),
      DecisionsModule,
      ...(options.hostImports ?? []),
    ],
    controllers: [HostPublicController, ...(options.hostControllers ?? [])],
    providers: options.hostProviders ?? [],
  };
}

export interface HostApp {
  app: INestApplication;
  api: ApiClient;
  close(): Promise<void>;
}

/** Boots the host on the chosen adapter with no global filter, pipe or guard of its own. */
export async function startHost(options: HostOptions): Promise<HostApp> {
  const adapter = options.platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(hostModule(options), adapter, { logger: false, abortOnError: false });
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    // A refused boot (onModuleInit) leaves the app built: close it, and its DataSource, whose
    // pool a refused boot's close left open (one connection per refused host, terminated later by
    // the test database's DROP ... WITH (FORCE) as an uncaught 57P01).
    const dataSource = app.get(DataSource, { strict: false });
    await app.close().catch(() => undefined);
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw error;
  }
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, api: new ApiClient(`http://127.0.0.1:${port}`), close: () => app.close() };
}
