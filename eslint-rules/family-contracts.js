// hostflow/family-contracts: each workflow family's api.ts (workflows/<family>/api.ts) is its
// contract: input, messages, *Ref types and typed start. The bridge, activities, the worker and
// the CLI reach a family through it alone, and it sits as low as shared/: it imports only shared/,
// platform-config/ and other families' contracts, so importing it never pulls workflow code in
// and never closes a circle (docs/architecture.md, "Workflow families").
import { existsSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';

const CONTRACT = /^workflows\/[^/]+\/api\.ts$/;
const BELOW_CONTRACTS = /^(shared|platform-config)\//;

function resolveTs(file, specifier) {
  const base = resolve(dirname(file), specifier);
  const ts = base.replace(/\.js$/, '.ts');
  return existsSync(ts) ? ts : undefined;
}

export default {
  meta: {
    type: 'problem',
    docs: {
      description: 'Reach a workflow family only through its contract, workflows/<family>/api.ts.',
    },
    schema: [
      {
        type: 'object',
        properties: { mayReachIn: { type: 'array', items: { type: 'string' } } },
        additionalProperties: false,
      },
    ],
    messages: {
      contractImports:
        "{{file}} is a family's contract: it imports only shared/, platform-config/ and other " +
        "families' api.ts, not {{target}}. Move what it needs into one of those.",
      reachIn:
        '{{file}} imports {{target}}, inside a workflow family: outside workflows/, import the ' +
        "family's contract (workflows/<family>/api.ts) instead; add what is missing there.",
      below:
        "{{file}} sits below the families' contracts (shared/, platform-config/): it may not " +
        'import {{target}}.',
    },
  },
  create(context) {
    const root = context.cwd;
    const file = relative(root, context.filename);
    if (!file.endsWith('.ts')) return {};
    // Folder prefixes (`test/`) or files (`locks/hold.ts`; a `/**/*.ts` glob counts as its folder).
    const mayReachIn = (context.options[0]?.mayReachIn ?? []).some((where) =>
      file.startsWith(where.replace(/\*\*\/\*\.ts$/, '')),
    );
    const check = (node, source) => {
      if (typeof source?.value !== 'string' || !source.value.startsWith('.')) return;
      const resolved = resolveTs(context.filename, source.value);
      if (!resolved) return;
      const target = relative(root, resolved);
      const data = { file, target };
      if (CONTRACT.test(file)) {
        if (!CONTRACT.test(target) && !BELOW_CONTRACTS.test(target))
          context.report({ node, messageId: 'contractImports', data });
      } else if (BELOW_CONTRACTS.test(file)) {
        if (target.startsWith('workflows/')) context.report({ node, messageId: 'below', data });
      } else if (!mayReachIn && target.startsWith('workflows/') && !CONTRACT.test(target)) {
        context.report({ node, messageId: 'reachIn', data });
      }
    };
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
    };
  },
};
