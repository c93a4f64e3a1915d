/** @type {import('jest').Config} */

const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }],
};

// The OpenAPI tests compile with the swagger CLI plugin, as `nest build` does (the plugin needs a whole
// program, so these files are not compiled in isolation).
const openapiTransform = {
  '^.+\\.ts$': [
    'ts-jest',
    {
      tsconfig: 'tsconfig.openapi.json',
      diagnostics: false,
      astTransformers: { before: ['<rootDir>/test/support/swagger-plugin-transformer.js'] },
    },
  ],
};

// The quick tier opens no socket: a spec that tries fails (test/support/quick-environment.ts, undone when
// the spec file ends, so that a later file of another tier in the same worker is not refused).
const quickEnvironment = { testEnvironment: '<rootDir>/test/support/quick-environment.ts' };

const database = {
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

module.exports = {
  testTimeout: 60000,
  projects: [
    // The fast tier (`npm run test:quick`): unit, service and controller specs need no database server, no
    // network (supertest reaches the controllers' app in memory: test/support/in-memory-http.ts; the
    // service specs reach an in-process PGlite through in-memory streams) and no real clock, and spawn no
    // tool: what does is in the `lint` project (npm run lint) or the medium and timing tiers. Measured on
    // 2 quiet cores (2026-11-29), transform cache warm: 49 s (86 s of CPU); with a PGlite started in every
    // service spec file rather than one per worker, 61 s. examples/ holds standalone programs for the
    // service's users, with their unit tests.
    {
      displayName: 'unit',
      ...quickEnvironment,
      rootDir: __dirname,
      // elements/test: the card elements' checks run against the vault's (the frame bundle and the API
      // share src/modules/tokens/data/card-rules.ts).
      roots: ['<rootDir>/src', '<rootDir>/examples', '<rootDir>/elements/test'],
      testMatch: ['**/*.spec.ts'],
      testPathIgnorePatterns: [
        '\\.service\\.spec\\.ts$',
        '\\.controller\\.spec\\.ts$',
        '\\.lint\\.spec\\.ts$',
      ],
      transform,
    },
    {
      // A service on its real repositories and the real UnitOfWork, over an in-process PGlite reached by
      // the pg driver through in-memory streams (test/support/service-database.ts): the migrated database
      // is built once and kept under the temporary directory; each worker starts one PGlite from it and
      // puts it back to that image before every spec file (test/support/service-environment.ts). No
      // hand-written repository fake.
      displayName: 'service',
      testEnvironment: '<rootDir>/test/support/service-environment.ts',
      globalTeardown: '<rootDir>/test/support/service-teardown.ts',
      rootDir: __dirname,
      roots: ['<rootDir>/src'],
      testMatch: ['**/*.service.spec.ts'],
      transform,
    },
    {
      // A controller in a small Nest application: the real guards, pipes and filter, its services faked
      // (test/support/controller-app.ts).
      displayName: 'controller',
      ...quickEnvironment,
      rootDir: __dirname,
      roots: ['<rootDir>/src'],
      testMatch: ['**/*.controller.spec.ts'],
      transform,
    },
    {
      // Checks of the project's tooling, run by `npm run lint` (lint:specs) rather than the quick tier: the
      // layering and SQL-placement rules fire on probe files (they spawn dependency-cruiser and ESLint
      // over a copy of src/), the SQL rule with type information, and the SQL snapshots are current
      // (test/sql; `npm run sql` rewrites them). Each takes 10 to 30 s; no database.
      displayName: 'lint',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/src'],
      testMatch: ['**/*.lint.spec.ts'],
      transform,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.e2e-spec.ts'],
      testPathIgnorePatterns: ['/test/openapi/'],
      transform,
      ...database,
    },
    {
      // Services and repositories against the run's PostgreSQL, without HTTP; and what needs real sockets
      // but no application (the graceful shutdown of the HTTP server).
      displayName: 'medium',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/test/medium'],
      testMatch: ['**/*.medium-spec.ts'],
      transform,
      ...database,
    },
    {
      displayName: 'openapi',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/test/openapi'],
      testMatch: ['**/*.e2e-spec.ts'],
      transform: openapiTransform,
      ...database,
    },
    {
      // Tests that measure elapsed time or depend on the machine's load (fairness between tenants, the
      // proxy's amplification limits, rate-limit windows): kept apart so that a slow run is recognised as
      // such. Jest has no per-project worker count: run them alone with `--selectProjects=timing -i`.
      displayName: 'timing',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/test/timing'],
      testMatch: ['**/*.timing-spec.ts'],
      transform,
      ...database,
    },
  ],
};
