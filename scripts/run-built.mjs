// Runs a compiled entry point from dist/, compiling first when dist/ is missing or older than src/.
// Keeps `npm start` and `npm run admin` working on a fresh clone without a separate build step.
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

const stamp = join(root, 'dist', '.build-stamp');
if (!existsSync(entry) || !existsSync(stamp) || statSync(stamp).mtimeMs < newest(join(root, 'src'))) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) {
    process.stderr.write('error: the TypeScript build failed (see above)\n');
    process.exit(1);
  }
  writeFileSync(stamp, '');
}
process.argv.splice(2, 1);
await import(pathToFileURL(entry).href);
