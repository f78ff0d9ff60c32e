// Runs a compiled entry point from dist/, compiling first when dist/ is missing or older than src/
// (and building the account page when dist/account-page/ is missing or older than assets/account/
// or packages/client/src/). Keeps `npm start` and `npm run admin` working on a fresh clone
// without a separate build step.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..');
const entry = join(root, 'dist', process.argv[2]);

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

function run(args, failure) {
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) {
    process.stderr.write(`error: ${failure} (see above)\n`);
    process.exit(1);
  }
}

const stamp = join(root, 'dist', '.build-stamp');
const page = join(root, 'dist', 'account-page', 'account.js');
const compiled = existsSync(entry) && existsSync(stamp) && statSync(stamp).mtimeMs >= newest(join(root, 'src'));
const pageBuilt =
  existsSync(page) &&
  statSync(page).mtimeMs >=
    Math.max(newest(join(root, 'assets', 'account')), newest(join(root, 'packages', 'client', 'src')));
if (!compiled)
  run(
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.json')],
    'the TypeScript build failed',
  );
if (!compiled || !pageBuilt) run([join(root, 'scripts', 'build-account.mjs')], 'the account page build failed');
if (!compiled) writeFileSync(stamp, '');
process.argv.splice(2, 1);
await import(pathToFileURL(entry).href);
