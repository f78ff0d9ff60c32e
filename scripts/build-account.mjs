// Builds the account page into dist/account-page/: its ES modules (assets/account/src/, TypeScript)
// bundled by esbuild into the one script the page loads (account.js), beside copies of its HTML,
// style sheet and icon. The server serves that folder (src/account/account-assets.ts).
//
// The page calls the API through the typed client (packages/client/src, bundled from source) and
// pins every request to the newest API version of the service's own version table
// (dist/versioning/api-versions.js, so run after tsc): the client's generated version list is
// replaced by that table here, so the bundle needs neither `npm run build:client` nor its output.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = resolve(import.meta.dirname, '..');
const source = join(root, 'assets', 'account');
const out = join(root, 'dist', 'account-page');

const { API_VERSIONS } = await import(pathToFileURL(join(root, 'dist', 'versioning', 'api-versions.js')).href);
const versions = API_VERSIONS.map((v) => v.date);

/** packages/client/src/generated/api-versions.js → the service's version table, oldest first. */
const versionTable = {
  name: 'service-api-versions',
  setup(b) {
    b.onResolve({ filter: /[\\/]generated[\\/]api-versions\.js$/ }, () => ({
      path: 'api-versions',
      namespace: 'service-api-versions',
    }));
    b.onLoad({ filter: /.*/, namespace: 'service-api-versions' }, () => ({
      contents: `export const DOCUMENT_API_VERSIONS = ${JSON.stringify(versions)};`,
      loader: 'js',
    }));
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(source, 'src', 'main.ts')],
  outfile: join(out, 'account.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  charset: 'utf8',
  legalComments: 'none',
  logLevel: 'warning',
  plugins: [versionTable],
});
for (const file of ['index.html', 'account.css', 'favicon.svg']) copyFileSync(join(source, file), join(out, file));
