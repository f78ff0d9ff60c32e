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
    },
  },
);
