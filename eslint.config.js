import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';
import noImportCycle from './eslint-rules/no-import-cycle.js';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/**
 * The layers (docs/architecture.md, "Layers"): a folder imports only folders below it, so the
 * import graph has no arrow up and no circle between folders. From the top:
 *
 *   test/, bench/      anything
 *   cli/, local-stack/ the command and the development stack (cli/ may start local-stack/)
 *   workers/           process entry points: the worker, the bridge, lock-audit, the bundlers
 *   k8s-bridge/, otp-server/   the bridge's watches and ingests; the OTP service
 *   workflows/         deterministic orchestration (activities as types only)
 *   activities/        adapters to the systems touched
 *   runtime/           process plumbing: logger, settings, metrics, health, HTTP body, watched files
 *   shared/            definitions that cross families and processes
 *   platform-config/   contract names and the parsing of host-config: imports no other folder
 */
const FOLDERS = [
  'test',
  'bench',
  'cli',
  'local-stack',
  'workers',
  'k8s-bridge',
  'otp-server',
  'workflows',
  'activities',
  'runtime',
  'shared',
  'platform-config',
];
/** Beyond the folders above it, what a folder may not import: siblings and lower folders it skips. */
const ALSO_FORBIDDEN = {
  workers: ['workflows'], // the worker loads the workflow bundle by path, never by import
  'k8s-bridge': ['otp-server', 'workflows', 'activities'],
  'otp-server': ['workflows', 'activities'],
  workflows: ['runtime'], // process plumbing has no place in the deterministic sandbox
};
/** What each folder may not import: every folder above it, and ALSO_FORBIDDEN's. */
const FORBIDDEN = Object.fromEntries(
  FOLDERS.slice(2).map((folder) => [
    folder,
    [...FOLDERS.slice(0, FOLDERS.indexOf(folder)), ...(ALSO_FORBIDDEN[folder] ?? [])],
  ]),
);
const layerPattern = (folder) => ({
  group: FORBIDDEN[folder].flatMap((above) => [`**/${above}`, `**/${above}/**`]),
  message:
    `${folder}/ imports only the folders below it (docs/architecture.md, "Layers"); ` +
    `not ${FORBIDDEN[folder].map((f) => `${f}/`).join(', ')}. Move what both need down a layer.`,
});

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tools/', '.hostflow/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    plugins: { hostflow: { rules: { 'no-import-cycle': noImportCycle } } },
    rules: {
      'hostflow/no-import-cycle': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O
    // libraries, and activities only as types (they run on the worker, not in the workflow).
    // The layer rule below applies too; one config per folder, since a later one replaces it.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflows must not use Node built-ins.',
          })),
          patterns: [
            {
              group: ['**/activities', '**/activities/**', '@kubernetes/*', 'ssh2', '@aws-sdk/*'],
              allowTypeImports: true,
              message: 'Workflows import activities (and I/O libraries) as types only.',
            },
            layerPattern('workflows'),
          ],
        },
      ],
    },
  },
  // Every other folder: only the folders below it. Activities, the bridge, the OTP service and
  // shared/ in particular never import workflows/: what they share lives in shared/.
  ...Object.keys(FORBIDDEN)
    .filter((folder) => folder !== 'workflows')
    .map((folder) => ({
      files: [`${folder}/**/*.ts`],
      rules: {
        '@typescript-eslint/no-restricted-imports': ['error', { patterns: [layerPattern(folder)] }],
      },
    })),
);
