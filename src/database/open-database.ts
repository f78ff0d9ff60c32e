import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { embeddedOptions, postgresOptions, runningEmbeddedServerOptions } from './data-source-options.js';
import { assertDatabaseUrl, CLI_RETRY, connectWithRetry, describeDatabaseUrl, SERVER_RETRY, type RetryPolicy } from './connection-errors.js';
import { listenEmbedded, openEmbedded, shareEmbedded } from './embedded.js';
import { registerInProcessNotifications } from './in-process-notifications.js';
import { runMigrationsLocked } from './migrate.js';

export type DatabaseRole = 'server' | 'cli';

/**
 * Opens the service's database and applies pending migrations (unless DB_MIGRATE=false).
 * - DATABASE_URL: PostgreSQL through a `pg` pool.
 * - Embedded, as the server: PGlite in this process, also shared on a Unix socket for the CLI.
 * - Embedded, as the CLI: the running server's socket if there is one, else PGlite directly.
 * `dataSource.destroy()` closes everything that was opened.
 * PostgreSQL: a malformed URL, a wrong password, a missing database or a host that does not
 * resolve fail at once with a DatabaseStartupError (one line); only transient failures are
 * retried (see connection-errors.ts), each retry reported through `retry.onRetry` with its delay.
 */
export async function openDatabase(
  config: AppConfig,
  role: DatabaseRole,
  migrate = config.env.DB_MIGRATE,
  retry: Partial<RetryPolicy> = {},
): Promise<DataSource> {
  const url = config.env.DATABASE_URL;
  if (url) {
    assertDatabaseUrl(url);
    const policy: RetryPolicy = {
      ...(role === 'server' ? SERVER_RETRY : CLI_RETRY),
      onRetry: (message) => process.stderr.write(`${message}\n`),
      ...retry,
    };
    const ds = await connectWithRetry(describeDatabaseUrl(url), () => new DataSource(postgresOptions(config, url)).initialize(), policy);
    if (migrate) await runMigrationsLocked(ds);
    return ds;
  }
  if (role === 'cli') {
    const viaServer = await runningEmbeddedServerOptions(config);
    if (viaServer) {
      // The server migrated at its start; a second migrator on the shared connection is not wanted.
      return new DataSource(viaServer).initialize();
    }
  }
  const db = await openEmbedded(config.dataDir);
  const ds = new DataSource(await embeddedOptions(db));
  try {
    await ds.initialize();
    if (migrate) await runMigrationsLocked(ds);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
  const share = role === 'server' ? await shareEmbedded(db, config.dataDir) : null;
  // The verification cache listens here instead of on a LISTEN connection (see VerificationLease).
  registerInProcessNotifications(ds, { listen: (channel, listener) => listenEmbedded(db, channel, listener) });
  const destroy = ds.destroy.bind(ds);
  ds.destroy = async () => {
    await destroy();
    await share?.stop();
    await db.close();
  };
  return ds;
}
