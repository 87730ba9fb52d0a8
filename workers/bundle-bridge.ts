// Bundles the bridge and its libraries into one minified file, ahead of time, as the container
// image does. Loaded as its ~1,000 separate modules (mostly @kubernetes/client-node's generated
// API), the bridge held about 25 MB more memory than as one file: peak RSS 131 against 104 MB in
// the local burst. Usage: node dist/workers/bundle-bridge.js [output.mjs]
//
// `ensureBridgeBundle` rebuilds it only when a file it was built from changed since: webpack's
// list of those files is kept beside it.
import { readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Stats } from 'webpack';

/**
 * The bridge as one bundled file, relative to the repository (the image's /src), which is what
 * it runs. local-stack/defaults.ts re-exports it for the processes it starts.
 */
export const BRIDGE_BUNDLE = 'dist/bridge-bundle.mjs';

const BRIDGE_MAIN = fileURLToPath(new URL('./bridge.js', import.meta.url));
/** dist/workers/bundle-bridge.js → the repository (or the image's /src). */
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/**
 * What the bridge's libraries leave out on purpose: ws's optional native add-ons, and the
 * Temporal client's loading of a payload converter by path, which the bridge does not use. Any
 * other warning fails the bundle.
 */
const EXPECTED_WARNINGS = [
  { module: /node_modules\/ws\//, message: /Can't resolve '(bufferutil|utf-8-validate)'/ },
  { module: /data-converter-helpers/, message: /request of a dependency is an expression/ },
];

/**
 * Writes the bundle to `output`, with its libraries' licenses beside it. Built in a directory of
 * this process's own and moved in place, so a reader never sees half of it.
 */
export async function bundleBridge(output: string): Promise<void> {
  const name = basename(output);
  const building = join(dirname(output), `.${name}.building-${process.pid}`);
  rmSync(building, { recursive: true, force: true });
  const { default: webpack } = await import('webpack'); // only when bundling: it is large
  const stats = await new Promise<Stats>((resolve, reject) =>
    webpack(
      {
        mode: 'production',
        target: 'node24',
        entry: BRIDGE_MAIN,
        output: {
          path: building,
          filename: name,
          module: true,
          chunkFormat: 'module',
          library: { type: 'module' },
        },
        experiments: { outputModule: true },
        // import.meta.url stays the bundle's own: bridge.ts runs when it is the main module.
        module: { parser: { javascript: { importMeta: false } } },
        // ASCII only: V8 keeps a source with any other character at two bytes per character.
        optimization: {
          minimize: true,
          minimizeOptions: { javascript: { compress: {}, format: { ascii_only: true } } },
        },
        devtool: false,
        performance: { hints: false },
        ignoreWarnings: EXPECTED_WARNINGS,
      },
      (err, result) => (err || !result ? reject(err ?? new Error('no result')) : resolve(result)),
    ),
  );
  const { errors = [], warnings = [] } = stats.toJson({ all: false, errors: true, warnings: true });
  const problems = [...errors, ...warnings].map((p) => p.message);
  if (problems.length > 0) throw new Error(`bundling the bridge: ${problems.join('\n')}`);
  const inputs = [...stats.compilation.fileDependencies].filter((file) => isFile(file));
  writeFileSync(inputsFile(output), JSON.stringify(inputs));
  for (const file of readdirSync(building).filter((f) => f !== name)) {
    renameSync(join(building, file), join(dirname(output), file));
  }
  renameSync(join(building, name), output);
  rmSync(building, { recursive: true, force: true });
}

/** Bundles the bridge unless the bundle is newer than every file it was built from. */
export async function ensureBridgeBundle(
  options: { output?: string; log?: (line: string) => void } = {},
): Promise<void> {
  const output = options.output ?? join(REPO_ROOT, BRIDGE_BUNDLE);
  if (!bridgeBundleIsStale(output)) return;
  options.log?.(`bundling the bridge into ${output} (once per build, about 20 s)`);
  await bundleBridge(output);
}

/** Whether the bundle at `output` is missing, or older than a file it was built from. */
export function bridgeBundleIsStale(output: string): boolean {
  try {
    const built = statSync(output).mtimeMs;
    const inputs = JSON.parse(readFileSync(inputsFile(output), 'utf8')) as string[];
    return inputs.some((file) => {
      const input = statSync(file, { throwIfNoEntry: false });
      return !input?.isFile() || input.mtimeMs > built;
    });
  } catch {
    return true; // no bundle yet, or no list of its inputs
  }
}

const inputsFile = (output: string) => `${output}.inputs.json`;
const isFile = (path: string) => statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const output = process.argv[2];
  if (process.argv.length > 3) {
    console.error('usage: node dist/workers/bundle-bridge.js [output.mjs]');
    process.exit(2);
  }
  (output ? bundleBridge(output) : ensureBridgeBundle({ log: console.log })).then(
    () => console.log(`bridge bundle at ${output ?? BRIDGE_BUNDLE}`),
    (err: Error) => {
      console.error(`bundle-bridge: ${err.message}`);
      process.exit(1);
    },
  );
}
