import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { embeddedOptions, postgresOptions, runningEmbeddedServerOptions } from './data-source-options.js';
import {
  assertDatabaseUrl,
  CLI_RETRY,
  connectWithRetry,
  describeDatabaseUrl,
  SERVER_RETRY,
  type RetryPolicy,
} from './connection-errors.js';
import { listenEmbedded, openEmbedded, shareEmbedded } from './embedded.js';
import { registerInProcessNotifications } from './in-process-notifications.js';
import { runMigrationsLocked } from './migrate.js';
import { currentRole, grantServiceRole, serviceRoleWarning, useEmbeddedServiceRole } from './roles.js';

export type DatabaseRole = 'server' | 'cli';

/**
 * Opens the service's database and applies pending migrations (unless DB_MIGRATE=false).
 * - DATABASE_URL: PostgreSQL through a `pg` pool; migrations as the owner through
 *   DATABASE_MIGRATION_URL when set (see migrateDatabase). In production, a server whose role has
 *   the owner's rights is warned about through `warn` (the CLI is not: an operator may be the owner).
 * - Embedded, as the server: PGlite in this process, also shared on a Unix socket for the CLI;
 *   migrated as the owner, then the session takes the service role (see roles.ts).
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
  warn: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
): Promise<DataSource> {
  const url = config.env.DATABASE_URL;
  if (url) {
    assertDatabaseUrl(url);
    const direct = config.env.DATABASE_DIRECT_URL;
    if (direct) assertDatabaseUrl(direct, 'DATABASE_DIRECT_URL');
    const policy: RetryPolicy = {
      ...(role === 'server' ? SERVER_RETRY : CLI_RETRY),
      onRetry: (message) => process.stderr.write(`${message}\n`),
      ...retry,
    };
    const ds = await connectWithRetry(
      describeDatabaseUrl(url),
      () => new DataSource(postgresOptions(config, url, undefined, Boolean(direct))).initialize(),
      policy,
    );
    try {
      if (migrate) await migrateDatabase(config, ds, policy);
      // The server's rights matter (it answers the network); the operator's CLI may well be the owner.
      const warning = config.production && role === 'server' ? await serviceRoleWarning(ds) : null;
      if (warning) warn(warning);
    } catch (error) {
      await ds.destroy().catch(() => undefined);
      throw error;
    }
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
    if (migrate) await migrateDatabase(config, ds);
    else await useEmbeddedServiceRole(ds);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
  const share = role === 'server' ? await shareEmbedded(db, config.dataDir) : null;
  // The verification cache listens here instead of on a LISTEN connection (see CoherenceLease).
  registerInProcessNotifications(ds, { listen: (channel, listener) => listenEmbedded(db, channel, listener) });
  const destroy = ds.destroy.bind(ds);
  ds.destroy = async () => {
    await destroy();
    await share?.stop();
    await db.close();
  };
  return ds;
}

/**
 * Applies pending migrations as the schema's owner; returns their names.
 * - PostgreSQL with DATABASE_MIGRATION_URL: through a connection of its own as that role, then
 *   grants the role `service` runs as its privileges (roles.ts), again every time.
 * - PostgreSQL with DATABASE_DIRECT_URL (and no migration URL): through a connection of its own
 *   there, since the migration lock is a session's advisory lock, which a transaction pooler
 *   in front of `service` would hand to whichever client comes next.
 * - PostgreSQL without either: through `service` itself (its role is then the owner).
 * - Embedded: as the bootstrap superuser, after which the session takes the service role again.
 */
export async function migrateDatabase(
  config: AppConfig,
  service: DataSource,
  retry: Partial<RetryPolicy> = {},
): Promise<string[]> {
  if (config.embedded) {
    // The session may be shared with a running server (the CLI through its socket): leave its role alone unless there is work.
    if (!(await service.showMigrations())) {
      await useEmbeddedServiceRole(service);
      return [];
    }
    await service.query('RESET ROLE');
    try {
      return await runMigrationsLocked(service);
    } finally {
      await useEmbeddedServiceRole(service);
    }
  }
  const ownerUrl = config.env.DATABASE_MIGRATION_URL;
  const directUrl = config.env.DATABASE_DIRECT_URL;
  const policy: RetryPolicy = { ...CLI_RETRY, onRetry: (message) => process.stderr.write(`${message}\n`), ...retry };
  if (!ownerUrl) {
    if (!directUrl) return runMigrationsLocked(service);
    assertDatabaseUrl(directUrl, 'DATABASE_DIRECT_URL');
    const session = await connectWithRetry(
      describeDatabaseUrl(directUrl),
      () => new DataSource(postgresOptions(config, directUrl, { max: 1, min: 0 })).initialize(),
      policy,
    );
    try {
      return await runMigrationsLocked(session);
    } finally {
      await session.destroy();
    }
  }
  assertDatabaseUrl(ownerUrl, 'DATABASE_MIGRATION_URL');
  const owner = await connectWithRetry(
    describeDatabaseUrl(ownerUrl),
    () => new DataSource(postgresOptions(config, ownerUrl, { max: 1, min: 0 })).initialize(),
    policy,
  );
  try {
    const applied = await runMigrationsLocked(owner);
    await grantServiceRole(owner, await currentRole(service));
    return applied;
  } finally {
    await owner.destroy();
  }
}
