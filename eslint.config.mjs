// @ts-check
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';
import sql from './eslint-rules/no-sql-outside-repositories.js';
import style from './eslint-rules/one-sql-style.js';

/** The project's own rules (eslint-rules/), each with its unit test under src/. */
const vault = {
  rules: {
    'no-sql-outside-repositories': sql.rule,
    'generate-sql-on-every-repository-method': style.generateSqlRule,
  },
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'elements/dist/**',
      'scripts/**/*.mjs',
      'coverage/**',
      'data/**',
      'node_modules/**',
      'test/generated/**',
      'eslint.config.mjs',
      '**/*.js',
      // The examples are standalone programs for the service's users, in plain CommonJS.
      '!examples/**/*.js',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  prettier,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Nest decorators and class-validator metadata rely on classes whose constructors are only used by DI.
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['test/**/*.ts', '**/*.spec.ts', 'bench/**/*.ts'],
    rules: {
      // supertest bodies are `any`; asserting on them field by field is the point of the tests.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The examples are CommonJS programs for Node that read the service's JSON answers, untyped by
    // nature and checked field by field (examples/tsconfig.json type-checks them from their JSDoc).
    files: ['examples/**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        fetch: 'readonly',
        Buffer: 'readonly',
        TextDecoder: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // SQL lives in repositories (eslint-rules/no-sql-outside-repositories.js says what reads as SQL, and
    // lists the other files where it is allowed, with their reasons).
    files: ['**/*.ts'],
    ignores: ['**/*.repository.ts', ...sql.ALLOWED.flatMap((allowed) => allowed.files)],
    plugins: { vault },
    rules: { 'vault/no-sql-outside-repositories': 'error' },
  },
  {
    // One SQL style (docs/architecture.md): repositories write SQL text with the typed builder, never
    // TypeORM's repository API or QueryBuilder, and every public method has its SQL snapshot
    // (eslint-rules/one-sql-style.js; src/sql-style.lint.spec.ts shows each check firing).
    files: ['**/*.repository.ts'],
    plugins: { vault },
    rules: {
      'no-restricted-syntax': ['error', ...style.RESTRICTED_SYNTAX],
      'no-restricted-imports': ['error', { paths: style.RESTRICTED_IMPORTS }],
      'vault/generate-sql-on-every-repository-method': 'error',
    },
  },
);
