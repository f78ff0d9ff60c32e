import 'reflect-metadata';
import { buildAppConfig, loadEnvironment } from '../config/app-config.js';
import { migrateDatabase, openDatabase } from './open-database.js';

/** `npm run migrate`: applies pending migrations (under the advisory lock, as the owner: see migrateDatabase) and exits. */
async function main(): Promise<void> {
  const config = buildAppConfig(loadEnvironment());
  const ds = await openDatabase(config, 'cli', false);
  try {
    const done = await migrateDatabase(config, ds);
    process.stdout.write(`${JSON.stringify({ applied: done })}\n`);
  } finally {
    await ds.destroy();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
