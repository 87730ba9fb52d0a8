// A lint rule of eslint-rules/ as the repository's eslint.config.js applies it: code linted as if
// it were at a path in the tree, so the rule's registration and the files it covers are tested
// too. No files are written.
import { ESLint } from 'eslint';
import { join } from 'node:path';
import { REPO_ROOT } from '../../local-stack/paths.js';

/** The lines `rule` refuses in `code`, as if it were the file at `path` (from the repo root). */
export function refusedBy(rule: string): (path: string, code: string) => Promise<string[]> {
  const eslint = new ESLint({ cwd: REPO_ROOT });
  return async (path, code) => {
    const [result] = await eslint.lintText(code, { filePath: join(REPO_ROOT, path) });
    return result!.messages
      .filter((m) => m.ruleId === rule)
      .map((m) => code.split('\n')[m.line - 1]!.trim());
  };
}
