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

const database = {
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

module.exports = {
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/src'],
      testMatch: ['**/*.spec.ts'],
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
      // Services and repositories against the run's PostgreSQL, without HTTP.
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
  ],
};
