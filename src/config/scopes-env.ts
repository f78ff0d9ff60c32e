import { parseJson, readConfigFile } from './config-files.js';
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
  if (env.API_KEY_SCOPES && env.API_KEY_SCOPES_FILE)
    throw new Error('set API_KEY_SCOPES or API_KEY_SCOPES_FILE, not both');
  const [variable, text] = env.API_KEY_SCOPES
    ? ['API_KEY_SCOPES', env.API_KEY_SCOPES]
    : env.API_KEY_SCOPES_FILE
      ? ['API_KEY_SCOPES_FILE', readConfigFile(env.API_KEY_SCOPES_FILE, 'API_KEY_SCOPES_FILE')]
      : [null, null];
  if (!variable || text === null) return undefined;
  const input = parseJson(text, variable);
  parseScopeRegistry(input, variable);
  return input as ScopeRegistryInput;
}
