import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

// SWC compiles the TypeScript with decorator metadata, which Nest's DI needs (esbuild drops it).
// The inline projects below extend this config (Vitest 5), plugins included.
const plugins = [swc.vite({ module: { type: 'es6' }, jsc: { target: 'es2022' } })];

const BROWSER_TESTS = [
  'test/e2e/account-page.test.ts',
  'test/e2e/account-page-service-keys.test.ts',
  'test/e2e/account-page-key-policy.test.ts',
  'test/e2e/account-key-controls.test.ts',
  'test/e2e/account-scope-narrowing.test.ts',
];

const databaseTier = {
  environment: 'node' as const,
  globalSetup: ['test/support/global-setup.ts'],
  testTimeout: 30_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  plugins,
  test: {
    // Two files at a time even on a 2-core machine (Vitest's default there is one): the database
    // and end-to-end files mostly wait on PostgreSQL, sockets and timers, so the suite takes about
    // 8 minutes instead of 13, while each file still gets a core.
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            'src/**/*.spec.ts',
            'test/support/**/*.spec.ts',
            'test/architecture/**/*.spec.ts',
            'packages/client/test/**/*.spec.ts',
          ],
          environment: 'node',
          sequence: { groupOrder: 0 },
        },
      },
      {
        // The account page's view code (assets/account/src) in a simulated DOM.
        test: {
          name: 'account-page',
          include: ['assets/account/src/**/*.spec.ts'],
          environment: 'happy-dom',
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...databaseTier,
          name: 'db',
          // A worker runs its files one after another in one process, importing the service's
          // module graph once instead of once per file (about a fifth of the suite's time went
          // to those imports). Every file starts and closes its own apps and databases; none
          // mocks a module or changes the environment of the process.
          isolate: false,
          include: [
            'test/db/**/*.test.ts',
            'test/e2e/**/*.test.ts',
            'test/host/**/*.test.ts',
            'packages/client/test/**/*.test.ts',
          ],
          exclude: BROWSER_TESTS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        // Chromium on a 2-core machine next to a dozen app instances makes keyboard-driven steps
        // race; the browser tests run as a later group, on their own.
        test: { ...databaseTier, name: 'browser', include: BROWSER_TESTS, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
