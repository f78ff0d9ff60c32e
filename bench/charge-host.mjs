// A tiny host application for `npm run bench`'s charging cases: it imports the built
// library (dist/index.js) the way a monolith imports the package, and declares one route of its
// own charged with @Charges. Plain ESM JavaScript: decorators are applied as functions.
//
// Environment: DATABASE_URL (DATABASE_DIRECT_URL beside a transaction pooler), SESSION_JWT_SECRET, API_KEY_SECRET, PORT, HOST,
// USAGE_SYNCHRONOUS_COMMIT (on|off, default on), USAGE_CHARGING (leased|exact, default leased), DB_POOL_MAX (default 10),
// BENCH_RECORDING (off: the paired "unrecorded" cases; the verification-outcome and scope-use counters record nothing).
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Charges, CurrentPrincipal, ENTITIES, KeysUsageIdentityModule, RequireScopes } from '../dist/index.js';

if (process.env.BENCH_RECORDING === 'off') {
  // What the two counters cost per request is what these methods do: without them, nothing is recorded.
  const { VerificationOutcomeRecorder } = await import('../dist/auth/verification-outcome-recorder.js');
  const { ScopeUsageRecorder } = await import('../dist/auth/scope-usage-recorder.js');
  VerificationOutcomeRecorder.prototype.count = () => {};
  ScopeUsageRecorder.prototype.record = () => {};
}

class AskController {
  /** One query-wallet charge per request, as a metered API of the host would take it. */
  ask(principal) {
    return { org_id: principal.orgId };
  }
}
// As TypeScript applies them: parameter decorators first, then the method's (bottom up), and the
// resulting descriptor defined on the prototype (@Charges is metadata, charged by the auth decorators' guards).
CurrentPrincipal()(AskController.prototype, 'ask', 0);
const ask = Object.getOwnPropertyDescriptor(AskController.prototype, 'ask');
Object.defineProperty(
  AskController.prototype,
  'ask',
  Reflect.decorate([Get('ask'), RequireScopes('decisions:read'), Charges('asks')], AskController.prototype, 'ask', ask),
);
Controller('host')(AskController);

class HostModule {}
Module({
  imports: [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      entities: [...ENTITIES],
      poolSize: Number(process.env.DB_POOL_MAX || 10),
      migrationsRun: false, // the bench's service instance has migrated the database
      // npm run test:ha: DATABASE_URL through PgBouncer in transaction mode, which refuses startup
      // parameters; bounded waits, so a failover is a 503 and not a hung request.
      ...(process.env.DATABASE_DIRECT_URL ? { connectTimeoutMS: 3000, extra: { query_timeout: 5000 } } : {}),
    }),
    KeysUsageIdentityModule.forRoot({
      apiKeySecret: process.env.API_KEY_SECRET,
      session: { secret: process.env.SESSION_JWT_SECRET },
      authFailureLimit: 0,
      usage: {
        synchronousCommit: process.env.USAGE_SYNCHRONOUS_COMMIT !== 'off',
        charging: process.env.USAGE_CHARGING || 'leased',
        pruneEveryMs: 0,
      },
      // The module option beside the pooled DataSource: the verification cache's LISTEN goes here.
      database: process.env.DATABASE_DIRECT_URL
        ? { directUrl: process.env.DATABASE_DIRECT_URL, transactionStatementTimeoutMs: 4000 }
        : undefined,
    }),
  ],
  controllers: [AskController],
})(HostModule);

const app = await NestFactory.create(HostModule, new FastifyAdapter(), { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
