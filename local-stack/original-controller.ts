// The multi-platform controller hostflow replaces, built from its own unmodified source and run
// against a local API server, for the tests of moving from it (test/migration.test.ts). Flags as
// in its deploy/operator/deployment.yaml, except: metrics and probes on loopback over plain HTTP,
// and no leader election (it runs alone).
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';
import { runBuildScript } from './build-script.js';

/** Its source: the unmodified copy kept beside the repository, or HOSTFLOW_ORIGINAL_SOURCE. */
export const ORIGINAL_SOURCE =
  process.env.HOSTFLOW_ORIGINAL_SOURCE ??
  join(REPO_ROOT, '..', 'shared', 'multi-platform-controller-c28c4a0');

/** Builds it the first time (a few minutes) and returns the binary's path. */
export async function ensureOriginalController(source = ORIGINAL_SOURCE): Promise<string> {
  const script = 'local-stack/original-controller/build.sh';
  const [binary] = await runBuildScript('the original controller', script, [source]);
  return binary!;
}

export interface OriginalControllerOptions {
  binary: string;
  kubeconfig: string;
  /** Its POD_NAMESPACE: where it reads host-config. */
  namespace: string;
  logFile: string;
}

/** Starts it and waits until its caches have synced and its workers run. */
export async function startOriginalController(
  options: OriginalControllerOptions,
): Promise<ManagedProcess> {
  const controller = spawnManaged(
    'original-controller',
    options.binary,
    [
      `--kubeconfig=${options.kubeconfig}`,
      '--leader-elect=false',
      `--metrics-bind-address=127.0.0.1:${await freePort()}`,
      '--metrics-secure=false',
      `--health-probe-bind-address=127.0.0.1:${await freePort()}`,
      '--zap-log-level=info',
      '--zap-encoder=console',
    ],
    { env: { ...process.env, POD_NAMESPACE: options.namespace }, logFile: options.logFile },
  );
  try {
    await waitFor(
      'the original controller to start its workers',
      () => (controller.tail(400).includes('Starting workers') ? true : undefined),
      { process: controller, timeoutMs: 120_000, intervalMs: 100 },
    );
  } catch (err) {
    await controller.stop();
    throw err;
  }
  return controller;
}
