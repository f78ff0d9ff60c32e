import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

// SWC compiles the TypeScript with decorator metadata, which Nest's DI needs (esbuild drops it).
const plugins = [swc.vite({ module: { type: 'es6' }, jsc: { target: 'es2022' } })];

export default defineConfig({
  plugins,
  test: {
    projects: [
      {
        plugins,
        test: { name: 'unit', include: ['src/**/*.spec.ts'], environment: 'node' },
      },
      {
        plugins,
        test: {
          name: 'db',
          include: ['test/db/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/host/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
