// Packs the typed client (packages/client) as an npm tarball: its compiled dist/, the OpenAPI
// document it was generated from, its README and manifest at the service's version, with
// openapi-fetch at the range the repo builds with. Prints { tarball, files } as JSON.
// Run after `npm run build:client` (`npm run pack:client` does both).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const client = join(root, 'packages', 'client');
const out = resolve(process.argv[2] ?? join(root, 'test-artifacts', 'client'));

if (!existsSync(join(client, 'dist', 'index.js')) || !existsSync(join(client, 'openapi.json'))) {
  process.stderr.write('error: packages/client is not built; run `npm run build:client` first\n');
  process.exit(1);
}
const manifest = JSON.parse(readFileSync(join(client, 'package.json'), 'utf8'));
const server = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
// The client's one dependency takes the range the repo builds and tests it with.
for (const [name, range] of Object.entries(manifest.dependencies)) {
  const mine = server.devDependencies?.[name] ?? server.dependencies?.[name];
  if (mine !== range) {
    process.stderr.write(`error: packages/client/package.json has ${name}@${range} but package.json has ${mine}\n`);
    process.exit(1);
  }
}

const stage = join(out, 'package');
rmSync(out, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
cpSync(join(client, 'dist'), join(stage, 'dist'), { recursive: true });
for (const file of ['openapi.json', 'README.md']) cpSync(join(client, file), join(stage, file));
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
  `${JSON.stringify({ tarball: join(out, info.filename), files: info.files.map((f) => f.path).sort() }, null, 2)}\n`,
);
