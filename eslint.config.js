// `npm run lint`: typescript-eslint's strict rules with type information, over everything that is compiled, every
// rule an error (`--max-warnings 0`), then Prettier's check of the layout.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'clients/typescript/api.d.ts', 'scratch/**', 'dist-*/**', 'coverage/**'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  // stylisticTypeChecked is left out: it would add 318 findings, 168 of them from non-nullable-type-assertion-style,
  // which asks for the `x!` that strict's no-non-null-assertion forbids, and 95 from array-type (Array<T> or T[]).
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: ['./tsconfig.test.json', './console/tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A `let` assigned once but read by closures made before the assignment (server.ts) cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Fastify plugins and hooks are async by contract, whether or not they await.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // Passing a caught error on as it came is the point of a catch that rejects.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // `(x) => resolve(x)` and `() => setState(v)`: a callback that returns what a void call returns is the idiom.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // Migrations are written against Kysely<any>: frozen, they must not follow today's table types, so what
    // they read is untyped.
    files: ['src/migrations/**', 'src/db/migrate.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Tests, benchmarks and scripts read answers as untyped JSON on purpose, and node:test awaits what test()
    // and describe() return itself.
    files: ['test/**', 'bench/**', 'scripts/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      // after() guards with ?. what a before() that failed left unassigned, and polling loops read flags other
      // closures set: TypeScript sees neither, so the rule reports what is needed.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // `list[0]!` where the test just put it there: an undefined fails the test loudly anyway.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
  },
)
