import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The Chromium the browser tests drive (playwright-core never downloads a browser of its own).
 * `CHROMIUM_PATH` names one explicitly (a path that does not exist means "none": that is how a
 * machine without a browser is simulated); otherwise the first of `chromium`, `chromium-browser`,
 * `google-chrome-stable`, `google-chrome` on the PATH.
 */
const NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.CHROMIUM_PATH !== undefined) return executable(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : null;
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of NAMES) {
      const candidate = join(dir, name);
      if (executable(candidate)) return candidate;
    }
  }
  return null;
}

export type BrowserTier = { run: true; path: string } | { run: false; fail: boolean; notice: string };

/** Run the browser tier with the Chromium found; without one, skip with a notice, or fail under CI=true. */
export function browserTier(env: NodeJS.ProcessEnv = process.env): BrowserTier {
  const path = findChromium(env);
  if (path) return { run: true, path };
  const where =
    env.CHROMIUM_PATH !== undefined
      ? `CHROMIUM_PATH=${env.CHROMIUM_PATH} is not an executable`
      : `no ${NAMES.join(' / ')} on the PATH`;
  if (env.CI === 'true') {
    return {
      run: false,
      fail: true,
      notice: `Browser tests cannot run under CI=true: ${where}. Install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH.`,
    };
  }
  return {
    run: false,
    fail: false,
    notice: `Browser tests SKIPPED: ${where}. Install Chromium (e.g. apt-get install -y chromium) or set CHROMIUM_PATH to run them.`,
  };
}
