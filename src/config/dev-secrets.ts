import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from './app-config.js';

interface StoredSecrets {
  SESSION_JWT_SECRET?: string;
  API_KEY_SECRET?: string;
}

/** Where generated development secrets are kept. */
export function developmentSecretsFile(config: AppConfig): string {
  return join(config.dataDir, 'secrets.json');
}

/**
 * In development (NODE_ENV not production), whatever the database (embedded or DATABASE_URL),
 * missing secrets are generated once and kept in `<DATA_DIR>/secrets.json` (mode 0600) so a
 * fresh clone works with no set-up and a restart keeps every key and session valid. The server
 * and the CLI read the same file. Production never generates anything.
 * Returns the names of the secrets it generated, for a log line that never shows values.
 */
export function fillDevelopmentSecrets(config: AppConfig): string[] {
  const env = config.env;
  if (config.production) return [];
  if (env.SESSION_JWT_SECRET && env.API_KEY_SECRET) return [];
  const file = developmentSecretsFile(config);
  let stored: StoredSecrets = {};
  try {
    stored = JSON.parse(readFileSync(file, 'utf8')) as StoredSecrets;
  } catch {
    stored = {};
  }
  const generated: string[] = [];
  for (const name of ['SESSION_JWT_SECRET', 'API_KEY_SECRET'] as const) {
    if (env[name]) continue;
    if (!stored[name]) {
      stored[name] = randomBytes(32).toString('base64url');
      generated.push(name);
    }
    env[name] = stored[name];
  }
  if (generated.length > 0) {
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(stored, null, 2) + '\n', { mode: 0o600 });
  }
  return generated;
}
