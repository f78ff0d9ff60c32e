import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The built page: `dist/account-page/` at the repository root (two folders up from this file
 * whether it runs as src/account/*.ts in tests or dist/account/*.js), written by
 * scripts/build-account.mjs (`npm run build`) from `assets/account/`: the script bundled from its
 * ES modules, the HTML, style sheet and icon copied beside it.
 */
export const ACCOUNT_ASSETS_DIR = resolve(import.meta.dirname, '..', '..', 'dist', 'account-page');

/**
 * Strict policy for the page and its assets: only this origin's script, style, images and API;
 * no inline code, no framing, no plugins, and Trusted Types so that an HTML-string sink
 * (innerHTML and friends) throws instead of parsing data as markup.
 */
export const ACCOUNT_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** Headers sent with the page and every asset. */
export const ACCOUNT_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': ACCOUNT_CSP,
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

export interface AccountAsset {
  body: Buffer;
  contentType: string;
  etag: string;
}

const FILES = {
  page: ['index.html', 'text/html; charset=utf-8'],
  script: ['account.js', 'text/javascript; charset=utf-8'],
  style: ['account.css', 'text/css; charset=utf-8'],
  icon: ['favicon.svg', 'image/svg+xml'],
} as const;

export type AccountAssetName = keyof typeof FILES;

/** Reads the files once, at start: a missing asset (the page not built) stops the app instead of 404ing later. */
export function loadAccountAssets(dir = ACCOUNT_ASSETS_DIR): Record<AccountAssetName, AccountAsset> {
  const out = {} as Record<AccountAssetName, AccountAsset>;
  for (const [name, [file, contentType]] of Object.entries(FILES) as [AccountAssetName, readonly [string, string]][]) {
    const body = readFileSync(resolve(dir, file));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    out[name] = { body, contentType, etag };
  }
  return out;
}
