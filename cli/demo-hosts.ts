// `npm start`'s demo static pool: two real sshd hosts in their own network namespaces, their
// admin keys as Secrets, and `host.demo-N.*` entries in host-config pointing at them. Other
// host-config keys are the operator's and are left as they are. The same hosts are registered
// as BareMetalHosts (their real MACs and IPs), so Provisionings can be tried on them too.
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { hostMac, startSshHosts, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';
import { statusCode } from '../shared/kube-errors.js';
import { BAREMETALHOST_API, HOST_SSH_ANNOTATIONS } from '../shared/bpa-api.js';
import type { SshHost } from '../local-stack/ssh-hosts.js';

export const DEMO_STATIC_PLATFORM = 'linux/arm64';
const DEMO_HOSTS = 2;
const DEMO_CONCURRENCY = 4;

export async function startDemoHosts(options: {
  stateDir: string;
  kubeConfig: KubeConfig;
  engineNamespace: string;
}): Promise<SshHostPool> {
  const pool = await startSshHosts({
    count: DEMO_HOSTS,
    stateDir: options.stateDir,
    prefix: 'hfdemo',
    restart: true,
  });
  try {
    const core = options.kubeConfig.makeApiClient(CoreV1Api);
    const namespace = options.engineNamespace;
    const entries: Record<string, string> = {};
    for (const [i, host] of pool.hosts.entries()) {
      const name = `demo-${i + 1}`;
      const secret = {
        metadata: { name: `${name}-ssh`, namespace },
        stringData: { id_rsa: host.adminPrivateKey },
      };
      // The hosts get fresh admin keys each start: replace the Secret.
      await core
        .deleteNamespacedSecret({ name: secret.metadata.name, namespace })
        .catch(() => undefined);
      await core.createNamespacedSecret({ namespace, body: secret });
      await registerBareMetalHost(options.kubeConfig, namespace, name, host, secret.metadata.name);
      Object.assign(entries, {
        [`host.${name}.address`]: host.address,
        [`host.${name}.user`]: host.adminUser,
        [`host.${name}.platform`]: DEMO_STATIC_PLATFORM,
        [`host.${name}.secret`]: secret.metadata.name,
        [`host.${name}.concurrency`]: String(DEMO_CONCURRENCY),
      });
    }
    await core.patchNamespacedConfigMap(
      { name: HOST_CONFIG_NAME, namespace, body: { data: entries } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    return pool;
  } catch (err) {
    await pool.stop();
    throw new Error(`demo SSH hosts: ${(err as Error).message}`, { cause: err });
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
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
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
