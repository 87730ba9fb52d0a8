// Starts the shared real components once for the whole suite: Temporal dev server (in memory),
// kube-apiserver + etcd with the TaskRun CRD, Cluster API core, and moto. Test files start their own workers,
// bridges and SSH hosts. A component that cannot start fails the run, naming it.
import { KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureNamespace, waitForLockPolicy } from '../../local-stack/cluster-setup.js';
import { LOCAL_ADMIN_USER, startKubeApiServer } from '../../local-stack/kube-apiserver.js';
import { planLockAudit, startLockAudit } from '../../local-stack/lock-audit.js';
import { freePort } from '../../local-stack/ports.js';
import { startCapiCore } from '../../local-stack/capi-core.js';
import { startMoto } from '../../local-stack/moto.js';
import { startLocalRunner } from '../../local-stack/runner.js';
import { startTemporalDevServer } from '../../local-stack/temporal.js';
import { ensureBridgeBundle } from '../../workers/bundle-bridge.js';
import { bundleWorkflows } from '../../workers/bundle-workflows.js';
import { TEST_ENV } from './env.js';

interface Started {
  stop(): Promise<void>;
}

declare global {
  var __hostflowComponents: Started[] | undefined;
  var __hostflowStateDir: string | undefined;
}

export default async function globalSetup(): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), 'hostflow-test-'));
  const logDir = join(stateDir, 'logs');
  globalThis.__hostflowStateDir = stateDir;
  const started: Started[] = (globalThis.__hostflowComponents = []);
  const t0 = Date.now();

  // Settled, not Promise.all: when one fails, the others are still starting, and jest runs no
  // teardown after a failed setup, so everything that did start is stopped here.
  // The API server sends its audit events to the lock-audit receiver, started once it is up.
  const lockAudit = await planLockAudit(join(stateDir, 'lock-audit'));
  const [kubeStart, temporalStart, motoStart, bundleStart, bridgeBundleStart] =
    await Promise.allSettled([
      startKubeApiServer({
        stateDir: join(stateDir, 'kube'),
        ephemeral: true,
        logDir,
        audit: lockAudit.sink,
        resourcesFor: LOCAL_ADMIN_USER,
      }).then(track),
      startTemporalDevServer({ persist: false, fixedPorts: false, logDir }).then(track),
      startMoto({ logDir }).then(track),
      // The same bundle the container image builds and its workers load.
      bundleWorkflows(quietLogger),
      // The bridge's, once here rather than by the first bridges the test files start at once.
      ensureBridgeBundle(),
    ]);
  function track<T extends Started>(component: T): T {
    started.push(component);
    return component;
  }
  try {
    const kube = valueOf(kubeStart);
    const temporal = valueOf(temporalStart);
    const moto = valueOf(motoStart);
    const bundle = valueOf(bundleStart);
    valueOf(bridgeBundleStart);
    const kc = new KubeConfig();
    kc.loadFromFile(kube.kubeconfigPath);
    // The one kubelet this machine may run (local-stack/kubelet-claim.ts), on the suite's one API
    // server: every test file's runner Jobs run on it, and its stop is the suite's.
    const runner = track(
      await startLocalRunner({
        bin: kube.bin,
        apiUrl: kube.url,
        ca: kube.ca,
        admin: kc,
        stateDir: join(stateDir, 'runner'),
        logDir,
      }),
    );
    process.env[TEST_ENV.runnerEnv] = JSON.stringify(runner.env);
    // Cluster API core, whose Machines HostflowMachines serve (test/machine*.test.ts).
    track(
      await startCapiCore({
        kc,
        kubeconfigPath: kube.kubeconfigPath,
        stateDir: join(stateDir, 'capi-core'),
        logFile: join(logDir, 'capi-core.log'),
      }),
    );
    process.env[TEST_ENV.buildStepImage] = runner.buildStepImage;
    // Until the Lock policy applies, writes in lockable namespaces are refused (fail closed).
    await ensureNamespace(kc, 'hostflow-lock-probe', { engineNamespace: true });
    await waitForLockPolicy(kc, 'hostflow-lock-probe');
    const bundlePath = join(stateDir, 'workflow-bundle.js');
    writeFileSync(bundlePath, bundle);
    process.env[TEST_ENV.kubeconfig] = kube.kubeconfigPath;
    process.env[TEST_ENV.temporalAddress] = temporal.address;
    process.env[TEST_ENV.temporalNamespace] = temporal.namespace;
    process.env[TEST_ENV.temporalUi] = temporal.uiUrl;
    process.env[TEST_ENV.motoEndpoint] = moto.endpoint;
    process.env[TEST_ENV.workflowBundle] = bundlePath;
    process.env[TEST_ENV.stateDir] = stateDir;
    const metricsPort = await freePort();
    track(
      await startLockAudit(lockAudit, {
        kubeconfig: kube.kubeconfigPath,
        metricsAddress: `127.0.0.1:${metricsPort}`,
        logFile: join(logDir, 'lock-audit.log'),
      }),
    );
    process.env[TEST_ENV.lockAuditMetrics] = `http://127.0.0.1:${metricsPort}/metrics`;
  } catch (err) {
    await Promise.all(started.map((component) => component.stop().catch(() => undefined)));
    throw err;
  }
  console.log(`\nreal components up in ${Date.now() - t0} ms (logs in ${logDir})`);
}

function valueOf<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => console.warn(m),
  error: (m: string) => console.error(m),
};
