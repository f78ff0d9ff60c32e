import { readFileSync } from 'node:fs';

/** Reading a JSON setting given inline or as a file (PLAN_LIMITS, API_KEY_SCOPES, …): errors name the variable. */
export function parseJson(text: string, variable: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${variable}: not valid JSON (${(error as Error).message})`);
  }
}

export function readConfigFile(path: string, variable: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(
      `${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
}

/**
 * A JSON setting given inline (`NAME`) or as a file (`NAME_FILE`), not both: its parsed value and
 * the variable it came from (what errors name); undefined when neither is set.
 */
export function readJsonSetting<N extends string>(
  env: { readonly [V in N | `${N}_FILE`]?: string },
  name: N,
): { variable: string; value: unknown } | undefined {
  const file: `${N}_FILE` = `${name}_FILE`;
  const inline = env[name];
  const path = env[file];
  if (inline && path) throw new Error(`set ${name} or ${file}, not both`);
  if (inline) return { variable: name, value: parseJson(inline, name) };
  if (path) return { variable: file, value: parseJson(readConfigFile(path, file), file) };
  return undefined;
}
