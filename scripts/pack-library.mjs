// Packs the library half of the repo: the files of dist/ reachable from dist/index.js (and the
// declarations reachable from dist/index.d.ts), with library/package.json as the manifest,
// library/README.md and docs/embedding.md. The server (main, embedded database, CLI, health,
// metrics, logging, account page) is never reachable from the entry, so it is never packed.
// Prints { tarball, files, packages } as JSON. Run after `npm run build` (`npm run pack:library`).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const dist = join(root, 'dist');
const out = resolve(process.argv[2] ?? join(root, 'test-artifacts', 'library'));

/**
 * Relative files and bare packages reachable from an entry through static imports, dynamic imports
 * and re-exports; `loadedStatically`: the packages a static import reaches (loaded with the entry).
 */
function walk(entry, resolveRelative) {
  const files = new Set();
  const packages = new Set();
  const loadedStatically = new Set();
  const visit = (file) => {
    if (files.has(file)) return;
    if (!existsSync(file)) throw new Error(`${relative(root, file)} is imported but missing`);
    files.add(file);
    // Comments out first: a doc comment may well say `from "several"`.
    const code = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    // Not a property named "from" (`"from", void 0` in decorator metadata): only `from '...'` and `import('...')`.
    for (const m of code.matchAll(/(?:(?<!['"])\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"\n]+)['"]/g)) {
      const spec = m[1];
      if (spec.startsWith('.')) visit(resolveRelative(resolve(dirname(file), spec)));
      else if (!spec.startsWith('node:') && !builtinModules.includes(spec)) {
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        packages.add(name);
        if (!m[0].includes('(')) loadedStatically.add(name);
      }
    }
  };
  visit(entry);
  return { files, packages, loadedStatically };
}

if (!existsSync(join(dist, 'index.js'))) {
  process.stderr.write('error: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const js = walk(join(dist, 'index.js'), (p) => p);
const dts = walk(join(dist, 'index.d.ts'), (p) => p.replace(/\.js$/, '.d.ts'));

const manifest = JSON.parse(readFileSync(join(root, 'library', 'package.json'), 'utf8'));
const server = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const allowed = new Set([...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)]);
const used = new Set([...js.packages, ...dts.packages]);
const stray = [...used].filter((p) => !allowed.has(p));
if (stray.length > 0) {
  process.stderr.write(`error: the library imports packages its manifest does not declare: ${stray.join(', ')}\n`);
  process.exit(1);
}
// An optional peer (pg-boss, standardwebhooks: only for EventsModule) is loaded on first use, never
// by importing the library: a host without events does not install it.
const optional = Object.entries(manifest.peerDependenciesMeta ?? {})
  .filter(([, meta]) => meta.optional)
  .map(([name]) => name);
const eager = optional.filter((name) => js.loadedStatically.has(name) || dts.loadedStatically.has(name));
if (eager.length > 0) {
  process.stderr.write(`error: the library imports optional peer dependencies statically: ${eager.join(', ')}\n`);
  process.exit(1);
}
// The library's own dependencies (and optional peers) take the server's ranges, so both deliverables run the same code.
for (const [name, range] of [
  ...Object.entries(manifest.dependencies),
  ...optional.map((name) => [name, manifest.peerDependencies[name]]),
]) {
  const mine = server.dependencies?.[name];
  if (mine !== undefined && mine !== range) {
    process.stderr.write(`error: library/package.json has ${name}@${range} but package.json has ${mine}\n`);
    process.exit(1);
  }
}

const stage = join(out, 'package');
rmSync(out, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
const files = [...js.files, ...dts.files].map((f) => relative(root, f)).sort();
for (const file of [...files, 'docs/embedding.md']) {
  mkdirSync(dirname(join(stage, file)), { recursive: true });
  copyFileSync(join(root, file), join(stage, file));
}
copyFileSync(join(root, 'library', 'README.md'), join(stage, 'README.md'));
writeFileSync(join(stage, 'package.json'), `${JSON.stringify({ ...manifest, version: server.version }, null, 2)}\n`);

const npm = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
const packed = spawnSync(npm[0], [...npm[1], 'pack', '--json', '--pack-destination', out], {
  cwd: stage,
  encoding: 'utf8',
});
if (packed.status !== 0) {
  process.stderr.write(packed.stderr ?? String(packed.error));
  process.exit(1);
}
const [info] = JSON.parse(packed.stdout);
process.stdout.write(
  `${JSON.stringify({ tarball: join(out, info.filename), files, packages: [...used].sort() }, null, 2)}\n`,
);
