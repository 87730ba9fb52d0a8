// `npm start`'s demo static pool: two real sshd hosts in their own network namespaces, their
// admin keys as Secrets, and `host.demo-N.*` entries in host-config pointing at them. Other
// host-config keys are the operator's and are left as they are. The same hosts are registered
// as BareMetalHosts (their real MACs and IPs), so Provisionings can be tried on them too.
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1Secret,
} from '@kubernetes/client-node';
import { hostMac, startSshHosts, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { HOST_KEY_STORE_NAME, storeKey } from '../activities/kubernetes/host-key-store.js';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';
import { statusCode } from '../shared/kube-errors.js';
import { BAREMETALHOST_API, HOST_SSH_ANNOTATIONS } from '../shared/bpa-api.js';
import type { SshHost } from '../local-stack/ssh-hosts.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../shared/ownership.js';
import { upsertSecret } from '../local-stack/upsert.js';

export const DEMO_STATIC_PLATFORM = 'linux/arm64';
const DEMO_HOSTS = 2;
const DEMO_CONCURRENCY = 4;

export async function startDemoHosts(options: {
  stateDir: string;
  kubeConfig: KubeConfig;
  engineNamespace: string;
}): Promise<SshHostPool> {
  // Machines that keep their disks: builds' users, a cluster's installer key and the hosts'
  // keys are there again after a restart, as after a reboot, for the work the engine resumes.
  const pool = await startSshHosts({
    count: DEMO_HOSTS,
    stateDir: options.stateDir,
    prefix: 'hfdemo',
    restart: true,
    keep: true,
  });
  try {
    const core = options.kubeConfig.makeApiClient(CoreV1Api);
    const namespace = options.engineNamespace;
    const entries: Record<string, string> = {};
    for (const [i, host] of pool.hosts.entries()) {
      const name = `demo-${i + 1}`;
      const secretName = `${name}-ssh`;
      const secret: V1Secret = {
        metadata: { name: secretName, namespace },
        stringData: { id_rsa: host.adminPrivateKey },
      };
      // Written in place, never deleted: while builds run on a host, its allocator Locks this
      // Secret against deletion (locks/platform-secrets.ts), not against updates.
      await upsertSecret(core, namespace, secret);
      await registerBareMetalHost(options.kubeConfig, namespace, name, host, secretName);
      Object.assign(entries, {
        [`host.${name}.address`]: host.address,
        [`host.${name}.user`]: host.adminUser,
        [`host.${name}.platform`]: DEMO_STATIC_PLATFORM,
        [`host.${name}.secret`]: secretName,
        [`host.${name}.concurrency`]: String(DEMO_CONCURRENCY),
        // as a platform team lists its hosts' keys: nothing is trusted on first use
        [`host.${name}.host-key`]: host.hostPublicKey,
      });
    }
    await core.patchNamespacedConfigMap(
      { name: HOST_CONFIG_NAME, namespace, body: { data: entries } },
      MERGE_PATCH,
    );
    await recordBareMetalHostKeys(core, namespace, pool);
    return pool;
  } catch (err) {
    await pool.stop();
    throw new Error(`demo SSH hosts: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * The hosts' keys as their BareMetalHosts' (reached by address) known keys, as their operator
 * records them: the same after a restart; new ones for hosts started afresh (a clean slate).
 */
async function recordBareMetalHostKeys(
  core: CoreV1Api,
  namespace: string,
  pool: SshHostPool,
): Promise<void> {
  const data = Object.fromEntries(
    pool.hosts.map((host) => [storeKey(`address.${host.address}`), host.hostPublicKey]),
  );
  // Marked as the engine's store, which the engine goes on writing: the engine-rights policy lets
  // it update only a store that carries the mark (an unmarked one from an older state dir gains it).
  const metadata = { name: HOST_KEY_STORE_NAME, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } };
  try {
    await core.patchNamespacedConfigMap(
      { name: HOST_KEY_STORE_NAME, namespace, body: { metadata, data } },
      MERGE_PATCH,
    );
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    await core.createNamespacedConfigMap({ namespace, body: { metadata, data } });
  }
}

/** The host as a metal3 BareMetalHost: its real MAC and IP in the status, its admin key named. */
async function registerBareMetalHost(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  host: SshHost,
  sshSecret: string,
): Promise<void> {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const mac = await hostMac(host);
  const api = { ...BAREMETALHOST_API, namespace };
  const body = {
    apiVersion: `${BAREMETALHOST_API.group}/${BAREMETALHOST_API.version}`,
    kind: 'BareMetalHost',
    metadata: {
      name,
      annotations: {
        [HOST_SSH_ANNOTATIONS.secret]: sshSecret,
        [HOST_SSH_ANNOTATIONS.user]: host.adminUser,
      },
    },
    spec: { online: true },
  };
  // Created once; a resumed cluster keeps its hosts' claims (spec.consumerRef).
  try {
    await custom.createNamespacedCustomObject({ ...api, body });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
    await custom.patchNamespacedCustomObject(
      { ...api, name, body: { metadata: { annotations: body.metadata.annotations } } },
      MERGE_PATCH,
    );
  }
  const current = (await custom.getNamespacedCustomObject({ ...api, name })) as Record<
    string,
    unknown
  >;
  await custom.replaceNamespacedCustomObjectStatus({
    ...api,
    name,
    body: {
      ...current,
      status: {
        // What metal3's baremetal-operator reports once a host is inspected and free.
        provisioning: { state: 'available' },
        hardware: {
          cpu: { count: 2 },
          ramMebibytes: 4096,
          nics: [{ name: 'eth0', mac, ip: host.address }],
        },
      },
    },
  });
}
