// A CommonJS host (no "type": "module", require() everywhere, no TypeScript): it loads the ESM
// package through Node's require(esm) (Node >= 22.12). Run by test/host/package-exports.test.ts
// inside the scratch host that installed the packed library.
require('reflect-metadata');
const { Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { TypeOrmModule } = require('@nestjs/typeorm');
const { ENTITIES, KeysUsageIdentityModule, MIGRATIONS } = require('keys-usage-identity');

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
  ],
})(AppModule);

NestFactory.create(AppModule, { logger: ['error'] })
  .then(async (app) => {
    await app.listen(0, '127.0.0.1');
    process.stdout.write(`listening ${app.getHttpServer().address().port}\n`);
  })
  .catch((error) => {
    process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  });
