import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'dist-apps/', 'coverage/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        // tsconfig.json covers src, test, bench, sample and scripts; the configs at the top level
        // get a default project of their own.
        projectService: { allowDefaultProject: ['*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // An `async` method without `await` is how a stub implements a Promise-returning
      // interface, and how a throw becomes a rejection.
      '@typescript-eslint/require-await': 'off',
      // Passing on a caught error or an abort reason unchanged, as `throw` may.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
    },
  },
  {
    // The library's files hold one role each and read top to bottom: a file that outgrows 300
    // lines, or a function 60, wants splitting before it is merged.
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 300 }],
      'max-lines-per-function': ['error', { max: 60 }],
    },
  },
);
