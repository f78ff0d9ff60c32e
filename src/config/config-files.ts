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
