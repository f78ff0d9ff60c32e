import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp } from './bootstrap.js';
import { buildAppConfig, ConfigError, loadEnvironment } from './config/app-config.js';
import { developmentSecretsFile, fillDevelopmentSecrets } from './config/dev-secrets.js';
import { MetricsServer } from './metrics/metrics-server.js';

/** Longest a graceful shutdown may take before the process exits anyway (orchestrators kill at 10 s or later). */
const SHUTDOWN_DEADLINE_MS = 8_000;

let listening = false;

async function main(): Promise<void> {
  // Nest's shutdown hooks drain requests, last-used writes and the pool; if the database stopped
  // answering, they could wait forever. The watchdog is unref'd: it never keeps the process alive.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      // Still starting (e.g. waiting for the database between retries): nothing to drain.
      if (!listening) process.exit(1);
      setTimeout(() => {
        process.stderr.write(`Shutdown took longer than ${SHUTDOWN_DEADLINE_MS} ms; exiting\n`);
        process.exit(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
    });
  }
  const config = buildAppConfig(loadEnvironment());
  const missing = (['SESSION_JWT_SECRET', 'API_KEY_SECRET'] as const).filter((name) => !config.env[name]);
  const generated = fillDevelopmentSecrets(config);
  const reused = missing.filter((name) => config.env[name] && !generated.includes(name));
  const app = await createApp(config);
  // After createApp, so these lines go through the app's logger (JSON in production).
  const logger = new Logger('Bootstrap');
  const secretsFile = developmentSecretsFile(config);
  if (generated.length > 0)
    logger.log(
      `Generated development secret(s) ${generated.join(', ')} in ${secretsFile} (values never printed; NODE_ENV=production generates nothing)`,
    );
  if (reused.length > 0)
    logger.log(`Using development secret(s) ${reused.join(', ')} from ${secretsFile} (values never printed)`);
  if (!config.env.API_KEY_SECRET)
    logger.warn('API_KEY_SECRET is not set: API keys are not configured on this deployment (501)');
  await app.listen(config.env.PORT, config.env.HOST);
  listening = true;
  const host = config.env.HOST === '0.0.0.0' || config.env.HOST === '::' ? 'localhost' : config.env.HOST;
  const base = `http://${host}:${config.env.PORT}`;
  const metrics =
    config.env.METRICS_PORT !== undefined ? `http://${host}:${app.get(MetricsServer).port}/metrics` : `${base}/metrics`;
  logger.log(
    [
      `Listening on ${base} (${config.embedded ? `embedded database in ${config.dataDir}` : 'PostgreSQL'})`,
      `  API reference: ${base}/docs   OpenAPI: ${base}/openapi.json   Account page: ${base}/account`,
      `  Health: ${base}/health/live, ${base}/health/ready   Metrics: ${metrics}${config.env.METRICS_TOKEN ? ' (bearer METRICS_TOKEN)' : ''}`,
      `  Get a session token: ${config.production ? 'node dist/cli/admin.js' : 'npm run --silent admin --'} session --user <user-id>   (see README, "Five-minute tour")`,
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  }
  process.exit(1);
});
