// A throwaway local stack for benchmarks: the same components as the tests, in a temp dir.
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureNamespace, installTaskRunCrd } from '../local-stack/cluster-setup.js';
import { startEngineProcess, type EngineProcess } from '../local-stack/engine.js';
import { startKubeApiServer } from '../local-stack/kube-apiserver.js';
import { startTemporalDevServer } from '../local-stack/temporal.js';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';

export interface BenchStack {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  namespace: string;
  worker: EngineProcess;
  bridge: EngineProcess;
  stop(): Promise<void>;
}

export async function startBenchStack(hostConfig: Record<string, string>): Promise<BenchStack> {
  const dir = mkdtempSync(join(tmpdir(), 'hostflow-bench-'));
  const logDir = join(dir, 'logs');
  const [kube, temporal] = await Promise.all([
    startKubeApiServer({ stateDir: join(dir, 'kube'), ephemeral: true, logDir }),
    startTemporalDevServer({ persist: false, fixedPorts: false, logDir }),
  ]);
  const kc = new KubeConfig();
  kc.loadFromFile(kube.kubeconfigPath);
  await installTaskRunCrd(kc);
  const namespace = 'bench';
  const engineNamespace = 'bench-engine';
  await ensureNamespace(kc, namespace);
  await ensureNamespace(kc, engineNamespace);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedConfigMap({
    namespace: engineNamespace,
    body: { metadata: { name: HOST_CONFIG_NAME }, data: hostConfig },
  });
  const env = {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    KUBECONFIG: kube.kubeconfigPath,
    HOSTFLOW_NAMESPACE: engineNamespace,
  };
  const [worker, bridge] = await Promise.all([
    startEngineProcess('worker', env, { logFile: join(logDir, 'worker.log') }),
    startEngineProcess('bridge', env, { logFile: join(logDir, 'bridge.log') }),
  ]);
  return {
    kc,
    core,
    custom: kc.makeApiClient(CustomObjectsApi),
    namespace,
    worker,
    bridge,
    async stop() {
      await Promise.all([worker.stop(), bridge.stop()]);
      await Promise.all([kube.stop(), temporal.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
