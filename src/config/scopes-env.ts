import { readJsonSetting } from './config-files.js';
import { parseScopeRegistry, type ScopeRegistryInput } from '../common/scope-names.js';

/**
 * The scope registry API_KEY_SCOPES (JSON) or API_KEY_SCOPES_FILE names, checked (one line naming
 * the variable and the offending entry on error); undefined when neither is set. The CLI reads
 * it before opening the database, to check `--scopes` against it.
 */
export function scopeRegistryFromEnv(env: {
  API_KEY_SCOPES?: string;
  API_KEY_SCOPES_FILE?: string;
}): ScopeRegistryInput | undefined {
  const setting = readJsonSetting(env, 'API_KEY_SCOPES');
  if (!setting) return undefined;
  parseScopeRegistry(setting.value, setting.variable);
  return setting.value as ScopeRegistryInput;
}
