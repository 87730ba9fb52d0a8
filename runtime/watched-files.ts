// Files that may be replaced while the server runs (a rotated certificate, a new store token):
// read once at start, then re-read whenever one's identity (inode, size, mtime) changes. A
// change that fails to apply (say, a new cert whose key has not arrived yet) is retried on the
// next poll, and the previous contents stay in use meanwhile.
import { readFileSync, statSync } from 'node:fs';

export interface WatchedFiles {
  stop(): void;
}

/** A file's identity (inode, size, mtime), or `missing`: it changes when the file is replaced. */
export function fileSignature(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

function readAll(paths: string[]): Buffer[] {
  return paths.map((path) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/**
 * Calls `apply` now (throwing if it fails, so a bad start is loud) and again after any of
 * `paths` changes. Later failures go to `onError`, once per distinct change.
 */
export function watchFiles(
  paths: string[],
  intervalMs: number,
  apply: (contents: Buffer[]) => void,
  onError: (err: Error) => void,
): WatchedFiles {
  let applied = paths.map(fileSignature).join('|');
  apply(readAll(paths));
  let reported = applied;
  const timer = setInterval(() => {
    const current = paths.map(fileSignature).join('|');
    if (current === applied) return;
    try {
      apply(readAll(paths));
      applied = current;
    } catch (err) {
      if (current !== reported) onError(err as Error);
      reported = current;
    }
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
