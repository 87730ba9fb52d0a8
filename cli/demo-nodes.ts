// `npm start`'s demo MachineConfigPool: three sshd hosts registered as Nodes (zones a, b, c),
// with the rpm-ostree, reboot and kubelet stand-ins of local-stack/os-stand-in.ts, the release
// image in the machine-config-osimageurl ConfigMap, the nodes' login key as Secret
// machine-config-ssh, and the pool `demo-workers` (maxUnavailable 1) selecting them. A
// MachineConfig with an osImageURL (deploy/examples/rollout.yaml) rolls an image over them.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { startNodeStandIns } from '../local-stack/os-stand-in.js';
import { keptKeyPair, startSshHosts } from '../local-stack/ssh-hosts.js';
import { upsert, upsertSecret } from '../local-stack/upsert.js';
import {
  MACHINE_CONFIG_POOL_API,
  NODE_ANNOTATIONS,
  OS_IMAGE_CONFIGMAP,
  POOL_ENGINE_LABEL,
  ROLE_LABEL,
} from '../shared/mco-api.js';
import { statusCode } from '../shared/kube-errors.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

export const DEMO_POOL = 'demo-workers';
export const DEMO_BASE_IMAGE = `quay.io/hostflow/demo-os@sha256:${'1'.repeat(64)}`;
const ROLE = 'demo-worker';

export async function startDemoNodes(options: {
  stateDir: string;
  kubeConfig: KubeConfig;
  engineNamespace: string;
}): Promise<{ nodes: string[]; stop(): Promise<void> }> {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
  // Machines that keep their disks, as the demo hosts do (demo-hosts.ts): a rollout that was
  // under way finds its nodes as it left them.
  const key = keptKeyPair(options.stateDir, 'core@demo-nodes');
  const hosts = await startSshHosts({
    keep: true,
    count: 3,
    stateDir: options.stateDir,
    prefix: 'hfnode',
    adminUser: 'core',
    adminKey: key,
    restart: true,
    bootDelayMs: 2000, // a reboot, seen from outside
  });
  const standIns = await startNodeStandIns(core, hosts.hosts, {
    image: DEMO_BASE_IMAGE,
    kubeletVersion: 'v1.34.1',
    labels: { [`node-role.kubernetes.io/${ROLE}`]: '' },
    zones: ['zone-a', 'zone-b', 'zone-c'],
    keep: true,
  });
  try {
    const namespace = options.engineNamespace;
    for (const { node } of standIns.nodes) {
      // Booted on the base image as the MCO's daemon would say it; a Node kept from the last
      // start says what the engine last wrote there.
      const current = await core.readNode({ name: node });
      if (current.metadata?.annotations?.[NODE_ANNOTATIONS.currentImage]) continue;
      await core.patchNode(
        {
          name: node,
          body: {
            metadata: {
              annotations: {
                [NODE_ANNOTATIONS.currentImage]: DEMO_BASE_IMAGE,
                [NODE_ANNOTATIONS.state]: 'Done',
              },
            },
          },
        },
        MERGE_PATCH,
      );
    }
    await upsertSecret(core, namespace, {
      metadata: { name: 'machine-config-ssh' },
      stringData: { id_rsa: key.privateKey },
    });
    await upsert(
      (name) => core.readNamespacedConfigMap({ namespace, name }),
      (body) => core.createNamespacedConfigMap({ namespace, body }),
      (name, body) => core.replaceNamespacedConfigMap({ namespace, name, body }),
      {
        metadata: { name: OS_IMAGE_CONFIGMAP.name },
        data: { [OS_IMAGE_CONFIGMAP.key]: DEMO_BASE_IMAGE },
      },
    );
    const pool = {
      apiVersion: `${MACHINE_CONFIG_POOL_API.group}/${MACHINE_CONFIG_POOL_API.version}`,
      kind: 'MachineConfigPool',
      metadata: {
        name: DEMO_POOL,
        // Opted in to this engine: a pool without the label is never served.
        labels: { [POOL_ENGINE_LABEL]: namespace },
        annotations: { 'hostflow.dev/boot-timeout': '2m' },
      },
      spec: {
        nodeSelector: { matchLabels: { [`node-role.kubernetes.io/${ROLE}`]: '' } },
        machineConfigSelector: { matchLabels: { [ROLE_LABEL]: ROLE } },
        maxUnavailable: 1,
      },
    };
    await custom
      .createClusterCustomObject({ ...MACHINE_CONFIG_POOL_API, body: pool })
      .catch(async (err: unknown) => {
        if (statusCode(err) !== 409) throw err;
        // Kept from the last start, with its settings: opted in, should it predate the label.
        await custom.patchClusterCustomObject(
          {
            ...MACHINE_CONFIG_POOL_API,
            name: DEMO_POOL,
            body: { metadata: { labels: pool.metadata.labels } },
          },
          MERGE_PATCH,
        );
      });
    return {
      nodes: standIns.nodes.map((n) => `${n.node} ${n.host.address}`),
      stop: async () => {
        await standIns.stop();
        await hosts.stop();
      },
    };
  } catch (err) {
    await standIns.stop();
    await hosts.stop();
    throw new Error(`demo nodes: ${(err as Error).message}`, { cause: err });
  }
}
