/**
 * `npm run test:faults`: fault injection that must not share the machine with the main suite (it
 * kills servers and restarts PostgreSQL). .ci/run runs it after `npm test`, one file at a time.
 */
/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 120000,
  projects: [
    {
      displayName: 'faults',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/test/faults'],
      testMatch: ['**/*.faults-spec.ts'],
      transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }] },
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
