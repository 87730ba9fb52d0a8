// hostflow/no-import-cycle: a relative import that leads, through the project's own files, back
// to the file that makes it. Types count: the circles this rule was written against were all a
// type imported back. The layer patterns in eslint.config.js keep circles out between folders;
// this rule keeps them out inside one. Not eslint-plugin-import-x's no-cycle: it skips every
// `import type` (checked with 4.18.1), and every circle found here was one. No dependency: the
// other files' imports are read with a regular expression over their text (comment lines
// skipped), once per lint run.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;
const importsOf = new Map();

/** `./x.js` from `file` → the .ts file it names, or undefined when it is not one of ours. */
function resolveTs(file, specifier) {
  const base = resolve(dirname(file), specifier);
  for (const candidate of [base.replace(/\.js$/, '.ts'), `${base}.ts`, `${base}/index.ts`]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

function relativeImports(file) {
  let found = importsOf.get(file);
  if (found) return found;
  const code = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n');
  found = [];
  for (const match of code.matchAll(SPECIFIER)) {
    const target = resolveTs(file, match[1]);
    if (target) found.push(target);
  }
  importsOf.set(file, found);
  return found;
}

/** A path of imports from `start` back to `goal`, or undefined. */
function pathBack(start, goal) {
  const seen = new Set([start]);
  const stack = [[start]];
  while (stack.length > 0) {
    const path = stack.pop();
    for (const next of relativeImports(path[path.length - 1])) {
      if (next === goal) return path;
      if (!seen.has(next)) {
        seen.add(next);
        stack.push([...path, next]);
      }
    }
  }
  return undefined;
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid an import that leads back to the importing file.' },
    schema: [],
    messages: {
      cycle:
        'Import circle: {{path}}. Move what the files share into a file both import ' +
        '(docs/architecture.md, "Layers").',
    },
  },
  create(context) {
    const file = context.filename;
    if (!file.endsWith('.ts')) return {};
    const check = (node, source) => {
      if (typeof source?.value !== 'string' || !source.value.startsWith('.')) return;
      const target = resolveTs(file, source.value);
      if (!target) return;
      const back = target === file ? [] : pathBack(target, file);
      if (!back) return;
      const root = context.cwd;
      const path = [file, ...(target === file ? [] : back), file].map((f) => relative(root, f));
      context.report({ node, messageId: 'cycle', data: { path: path.join(' → ') } });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
    };
  },
};
