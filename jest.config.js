// Tests are compiled by `tsc` into dist/ (see deploy/bootstrap.sh) and run there as native ESM,
// so jest needs no transform and loads @kubernetes/client-node (ESM-only) as it is.
export default {
  rootDir: 'dist',
  testMatch: ['<rootDir>/test/**/*.test.js'],
  transform: {},
  testEnvironment: 'node',
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  setupFilesAfterEnv: ['<rootDir>/test/support/close-ssh.js'],
  testSequencer: '<rootDir>/test/support/sequencer.js',
  testTimeout: 120_000,
  maxWorkers: 2,
  verbose: true,
};
