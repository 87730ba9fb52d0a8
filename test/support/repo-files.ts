// Reading the repository's own files, for the pure tests that hold docs and registries to the
// tree (extension-points, architecture-doc). Paths are relative to the repository root.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../local-stack/paths.js';

export const repoText = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

export const repoHas = (path: string): boolean => existsSync(join(REPO_ROOT, path));

/** Each workflow workflows/index.ts exports, with the module it takes it from ('./family/file.js'). */
export function workflowExports(): Array<{ name: string; from: string }> {
  return [
    ...repoText('workflows/index.ts').matchAll(/^export \{ (\w+) \} from '(\.\/[^']+)';$/gm),
  ].map(([, name, from]) => ({ name: name!, from: from! }));
}

/** The folders directly in `path`, by name, leaving out hidden ones. */
export function foldersIn(path: string): string[] {
  return readdirSync(join(REPO_ROOT, path))
    .filter((name) => !name.startsWith('.'))
    .filter((name) => statSync(join(REPO_ROOT, path, name)).isDirectory())
    .sort();
}

/** The files directly in `path`, by name. */
export function filesIn(path: string): string[] {
  return readdirSync(join(REPO_ROOT, path))
    .filter((name) => statSync(join(REPO_ROOT, path, name)).isFile())
    .sort();
}

/** The text of a Markdown section, from its heading to the next heading of its level or above. */
export function section(markdown: string, heading: string): string {
  const level = /^#+/.exec(heading)![0].length;
  const start = markdown.split('\n').findIndex((line) => line === heading);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const lines = markdown.split('\n').slice(start + 1);
  const end = lines.findIndex((line) => /^#+ /.test(line) && /^#+/.exec(line)![0].length <= level);
  return lines.slice(0, end < 0 ? undefined : end).join('\n');
}

/** The first cells of a Markdown table's rows (the header and the rule left out). */
export function firstCells(table: string): string[] {
  return table
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2)
    .map((line) => line.split('|')[1]!.trim());
}

/** The `code spans` in a text, fenced code blocks left out. */
export const codeSpans = (text: string): string[] =>
  [...text.replace(/^```[^]*?^```$/gm, '').matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
