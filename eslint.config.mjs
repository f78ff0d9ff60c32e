// The linter catches the easy mistakes; Prettier (.prettierrc.json) decides layout.
// Type-checked rules over src/: no floating promises, no unused variables, no explicit `any`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'packages/**',
      'test/**',
      'bench/**',
      'scripts/**',
      'assets/**',
      'library/**',
      'deploy/**',
      '*.config.*',
      '*.cjs',
      '*.mjs',
    ],
  },
  {
    files: ['src/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
      // Verification and org resolution answer synchronously when they can (no promise hop), so
      // arrays mixing answers and promises are by design; Promise.all takes both.
      '@typescript-eslint/await-thenable': ['error', { allowMixedPromiseArrays: true }],
      // A file past 300 lines holds more than one concept: split it (migrations excepted, below).
      'max-lines': ['error', { max: 300 }],
    },
  },
  {
    files: ['src/database/migrations/**/*.ts'],
    rules: { 'max-lines': 'off' },
  },
  {
    // Unit specs sit beside the code but outside tsconfig.json (the build): they are typed by
    // tsconfig.test.json, as `npm run typecheck` types them.
    files: ['src/**/*.spec.ts'],
    languageOptions: {
      parserOptions: { projectService: false, project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Fakes implement the async ports they stand in for without awaiting anything.
      '@typescript-eslint/require-await': 'off',
      // Specs pass methods as values (metadata targets, ExecutionContextHost, `expect(fake.method)`), never call them unbound.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
