import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tools/', '.hostflow/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O
    // libraries, and activities only as types (they run on the worker, not in the workflow).
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
          ],
        },
      ],
    },
  },
  {
    // Activities, the bridge and the other processes share definitions through shared/, never
    // through workflow code (docs/architecture.md, "Repository layout"); workflows import activities as types only.
    files: ['activities/**/*.ts', 'k8s-bridge/**/*.ts', 'otp-server/**/*.ts', 'shared/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/workflows', '**/workflows/**'],
              message: 'Import shared definitions from shared/, not from workflows/.',
            },
          ],
        },
      ],
    },
  },
);
