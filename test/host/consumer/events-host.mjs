// A host that imports EventsModule from the installed package: the outbox relay, the delivery
// workers and the webhook routes. pg-boss and standardwebhooks are its optional peers: without
// them the host stops at start with a message that names them. Run by test/host/package-exports.test.ts.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ENTITIES, EventsModule, KeysUsageIdentityModule, MIGRATIONS } from 'keys-usage-identity';

class AppModule {}
Module({
  imports: [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      entities: [...ENTITIES],
      migrations: [...MIGRATIONS],
      migrationsRun: true,
    }),
    KeysUsageIdentityModule.forRoot({
      apiKeySecret: process.env.API_KEY_SECRET,
      session: { secret: process.env.SESSION_JWT_SECRET },
    }),
    EventsModule.register({
      events: {
        queue: { connectionString: process.env.DATABASE_URL },
        queuePoolMax: 2,
        worker: true,
        pollIntervalMs: 200,
        retryLimit: 2,
        retryDelaySeconds: 1,
        retryDelayMaxSeconds: 1,
        timeoutMs: 5000,
        httpsOnly: false,
        // The test's receiver listens on loopback, on an ephemeral port.
        allowCidrs: ['127.0.0.1/32'],
        allowedPorts: [[1024, 65535]],
        maxEndpointsPerOrg: 10,
        sendRatePerMinute: 10,
        orgConcurrency: 2,
        expiryScanCron: '*/5 * * * *',
      },
    }),
  ],
})(AppModule);

NestFactory.create(AppModule, { logger: ['error'] })
  .then(async (app) => {
    app.enableShutdownHooks();
    await app.listen(0, '127.0.0.1');
    process.stdout.write(`listening ${app.getHttpServer().address().port}\n`);
  })
  .catch((error) => {
    process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  });
