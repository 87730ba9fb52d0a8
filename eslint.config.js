import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';
import noImportCycle from './eslint-rules/no-import-cycle.js';
import noAwaitInHandler from './eslint-rules/no-await-in-handler.js';
import statusThroughReports from './eslint-rules/status-through-reports.js';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/**
 * The layers (docs/architecture.md, "Layers"): a folder imports only folders below it, so the
 * import graph has no arrow up and no circle between folders. From the top:
 *
 *   test/, bench/      anything
 *   cli/, local-stack/ the command and the development stack (cli/ may start local-stack/)
 *   workers/           process entry points: the worker, the bridge, the bundlers
 *   k8s-bridge/, otp-server/   the bridge's watches and ingests; the OTP service
 *   workflows/         deterministic orchestration (activities as types only)
 *   activities/        adapters to the systems touched
 *   runtime/           process plumbing: logger, settings, metrics, health, HTTP body, watched files
 *   shared/            definitions that cross families and processes
 *   platform-config/   contract names and the parsing of host-config: imports no other folder
 *
 * One folder is a family's rather than a layer's: locks/ holds the Lock family whole (its
 * names, adapter, workflow kit part and audit receiver), and LOCKS_LAYERS places each of its
 * files in a layer, whose rule that file then follows and whose rule guards it from the others.
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
/** The layer of each file in locks/ (docs/locks.md, "Where the code is"). */
const LOCKS_LAYERS = {
  'api.ts': 'shared', // the Lock's names and shapes
  'adapter.ts': 'activities', // syncLocks: the Kubernetes adapter
  'platform-secrets.ts': 'activities', // what an allocator locks, from host-config
  'hold.ts': 'workflows', // the kit part: take and release from a workflow
  'denials.ts': 'k8s-bridge', // the audit receiver's parts
  'status.ts': 'k8s-bridge',
  'watch.ts': 'k8s-bridge',
  'audit-receiver.ts': 'workers', // the lock-audit process
};
const locksFilesIn = (layers) =>
  Object.keys(LOCKS_LAYERS).filter((file) => layers.includes(LOCKS_LAYERS[file]));
/** Import specifiers of these locks/ files: from elsewhere, and (inLocks) from beside them. */
const locksImports = (files, inLocks) =>
  files.flatMap((file) => {
    const js = file.replace(/\.ts$/, '.js');
    return [`**/locks/${js}`, ...(inLocks ? [`./${js}`] : [])];
  });
const layerPattern = (layer, inLocks = false) => ({
  group: [
    ...FORBIDDEN[layer].flatMap((above) => [`**/${above}`, `**/${above}/**`]),
    ...locksImports(locksFilesIn(FORBIDDEN[layer]), inLocks),
  ],
  message:
    `${layer}/ (and locks/ files of its layer) imports only the folders below it ` +
    `(docs/architecture.md, "Layers"); ` +
    `not ${FORBIDDEN[layer].map((f) => `${f}/`).join(', ')}, nor locks/ files of those layers ` +
    `(LOCKS_LAYERS in eslint.config.js). Move what both need down a layer.`,
});
/** The files of a layer: its folder, and its files in locks/. */
const filesOf = (layer) => [`${layer}/**/*.ts`, ...locksFilesIn([layer]).map((f) => `locks/${f}`)];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tools/', '.hostflow/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    plugins: {
      hostflow: {
        rules: {
          'no-import-cycle': noImportCycle,
          'no-await-in-handler': noAwaitInHandler,
          'status-through-reports': statusThroughReports,
        },
      },
    },
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
    files: filesOf('workflows'),
    rules: {
      // Handlers record; the main loop acts (eslint-rules/no-await-in-handler.js).
      'hostflow/no-await-in-handler': 'error',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflows must not use Node built-ins.',
          })),
          patterns: [
            {
              group: [
                '**/activities',
                '**/activities/**',
                ...locksImports(locksFilesIn(['activities']), true),
                '@kubernetes/*',
                'ssh2',
                '@aws-sdk/*',
              ],
              allowTypeImports: true,
              message: 'Workflows import activities (and I/O libraries) as types only.',
            },
            layerPattern('workflows', true),
          ],
        },
      ],
    },
  },
  // Every other folder: only the folders below it. Activities, the bridge, the OTP service and
  // shared/ in particular never import workflows/: what they share lives in shared/.
  ...Object.keys(FORBIDDEN)
    .filter((folder) => folder !== 'workflows')
    .flatMap((folder) => [
      {
        files: [`${folder}/**/*.ts`],
        rules: {
          '@typescript-eslint/no-restricted-imports': [
            'error',
            { patterns: [layerPattern(folder)] },
          ],
        },
      },
      ...locksFilesIn([folder]).map((file) => ({
        files: [`locks/${file}`],
        rules: {
          '@typescript-eslint/no-restricted-imports': [
            'error',
            { patterns: [layerPattern(folder, true)] },
          ],
        },
      })),
    ]),
  {
    // A resource's status is written from workflows only by its family's report class
    // (eslint-rules/status-through-reports.js says which calls and files).
    files: filesOf('workflows'),
    rules: { 'hostflow/status-through-reports': 'error' },
  },
  {
    // The workflow bundle's modules (workflows/ and what it imports from the layers below) are
    // evaluated once per workflow thread and shared by every workflow (workers/workflow-code.ts):
    // state kept at module scope would leak from one workflow into another.
    files: [...filesOf('workflows'), ...filesOf('shared'), ...filesOf('platform-config')],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...[
          // at module scope, exported or not
          ':matches(Program, Program > ExportNamedDeclaration) > VariableDeclaration[kind!="const"]',
          ':matches(Program, Program > ExportNamedDeclaration) > VariableDeclaration > VariableDeclarator > NewExpression[callee.name=/^(Weak)?(Map|Set)$/]',
          'PropertyDefinition[static=true][readonly!=true]',
        ].map((selector) => ({
          selector,
          message:
            'Workflow modules are shared by every workflow on a worker thread: keep no mutable ' +
            'state at module scope (docs/architecture.md, "Shared workflow modules").',
        })),
      ],
    },
  },
  {
    // A new file in locks/ is placed in a layer before it lints.
    files: ['locks/**/*.ts'],
    ignores: Object.keys(LOCKS_LAYERS).map((file) => `locks/${file}`),
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Program',
          message: 'Every file in locks/ has a layer: add it to LOCKS_LAYERS in eslint.config.js.',
        },
      ],
    },
  },
);
