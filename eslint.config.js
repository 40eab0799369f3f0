// The linter CI runs (`npm run lint`): the recommended rules of ESLint and typescript-eslint, plus the few
// habits of STYLE.md a machine can check. Formatting is left to the editor; correctness is what this catches.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/', 'node_modules/', 'coverage/', 'docs/', 'fixtures/', 'oclif.manifest.json']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // Unused names are dead code; a leading underscore marks a deliberately ignored argument.
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none'}],
      // Results go through the command, diagnostics through `debug` (STYLE habit 8).
      'no-console': 'error',
      eqeqeq: ['error', 'always', {null: 'ignore'}],
      'prefer-const': 'error',
    },
  },
  {
    // Every start loads what the command imports: the ops barrel would load every operation (yaml, search, the
    // session formats…) into `jarvis memory snapshot`. Commands and their helpers import the operation's module.
    files: ['src/commands/**', 'src/cli/**'],
    rules: {'no-restricted-imports': ['error', {patterns: [{group: ['**/ops/index.js'], message: "Import the operation's own module (ops/events/snapshot.js…): the barrel loads every operation at start-up."}]}]},
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {globals: {process: 'readonly', URL: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly'}},
  },
  {
    // bin/ is CommonJS (bin/package.json).
    files: ['**/*.cjs', 'bin/*.js'],
    languageOptions: {sourceType: 'commonjs', globals: {process: 'readonly', require: 'readonly', __dirname: 'readonly'}},
    rules: {'@typescript-eslint/no-require-imports': 'off'},
  },
  {
    // Tests, benchmarks and scripts print on purpose and may use loose helpers.
    files: ['test/**', 'bench/**', 'scripts/**', 'bin/**'],
    rules: {'no-console': 'off', '@typescript-eslint/no-explicit-any': 'off'},
  },
)
