import { readJsonSetting } from './config-files.js';
import { parseMeterRegistry, type MeterRegistryInput } from '../common/meter-registry.js';

/**
 * The deployment's own meters USAGE_METERS (JSON) or USAGE_METERS_FILE names, checked (one line
 * naming the variable and the offending entry on error); undefined when neither is set. The CLI
 * reads it before opening the database, to check `--meter` against it.
 */
export function meterRegistryFromEnv(env: {
  USAGE_METERS?: string;
  USAGE_METERS_FILE?: string;
}): MeterRegistryInput | undefined {
  const setting = readJsonSetting(env, 'USAGE_METERS');
  if (!setting) return undefined;
  parseMeterRegistry(setting.value, setting.variable);
  return setting.value as MeterRegistryInput;
}
