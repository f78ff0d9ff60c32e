// The README's "Embedding in your Nest app" example, compiled and run by test/host/package-exports.test.ts.
import { Body, Controller, Get, Injectable, Module, Post } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  Charges,
  CurrentPrincipal,
  ENTITIES,
  KeysUsageIdentityModule,
  MIGRATIONS,
  RequireScopes,
  type Principal,
} from 'keys-usage-identity';

/** The host's configuration (here from the environment). */
@Injectable()
export class HostConfig {
  readonly databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/app';
  readonly apiKeySecret = process.env.API_KEY_SECRET ?? null;
  readonly sessionSecret = process.env.SESSION_JWT_SECRET!;
}

@Module({ providers: [HostConfig], exports: [HostConfig] })
export class HostConfigModule {}

/** The host's own route, protected by our credentials and charged to our meters. */
@Controller('decisions')
export class DecisionsController {
  @Post()
  @RequireScopes('decisions:write')
  @Charges('captures')
  capture(@CurrentPrincipal() principal: Principal, @Body() body: { title?: string }) {
    return { org_id: principal.orgId, title: body.title ?? null };
  }
}

/** A route of the host's that the module leaves alone. */
@Controller('health')
export class HealthController {
  @Get()
  check() {
    return { ok: true };
  }
}

@Module({
  imports: [
    HostConfigModule,
    TypeOrmModule.forRootAsync({
      imports: [HostConfigModule],
      inject: [HostConfig],
      useFactory: (config: HostConfig) => ({
        type: 'postgres' as const,
        url: config.databaseUrl,
        entities: [...ENTITIES], // plus the host's own entities
        migrations: [...MIGRATIONS], // plus the host's own migrations
        migrationsRun: true,
      }),
    }),
    KeysUsageIdentityModule.forRootAsync({
      imports: [HostConfigModule],
      inject: [HostConfig],
      useFactory: (config: HostConfig) => ({
        apiKeySecret: config.apiKeySecret,
        session: { secret: config.sessionSecret },
        planLimits: {
          free: { wallet: 100, imports: 10, captures: 2 },
          pro: { wallet: null, imports: 1000, captures: 10000 },
        },
      }),
    }),
  ],
  controllers: [DecisionsController, HealthController],
})
export class AppModule {}
