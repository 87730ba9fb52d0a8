// SSH test hosts as the Nodes of a MachineConfigPool. These hosts have no ostree, no systemd and
// no kubelet, so three small stand-ins play their parts, and say so:
//   - `rpm-ostree` (rebase, status --json) keeps the booted and staged image in /etc/hostflow-ostree
//     (the host's /etc survives its restarts, as a disk survives a reboot);
//   - `systemctl reboot` asks for a reboot, which this module carries out: the host's sshd is
//     killed and restarted, and the staged image becomes the booted one (unless told to fail);
//   - the kubelet's part, here: the Node object, NotReady while its host reboots.
// Both scripts go on a tmpfs over /usr/local/sbin inside the host's own mount namespace, first in
// sudo's secure_path, so the engine runs the real command lines unchanged.
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { netnsPids } from './netns.js';
import { waitFor } from './process.js';
import { statusCode } from '../shared/kube-errors.js';
import type { SshHost } from './ssh-hosts.js';
import { sshBanner } from '../activities/ssh/banner.js';
import { ZONE_LABEL } from '../shared/mco-api.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const STATE = '/etc/hostflow-ostree';
/** How rpm-ostree names a registry image, as the engine passes it (activities/ssh/os-image.ts). */
const OSTREE_PREFIX = 'ostree-unverified-registry:';

const RPM_OSTREE = `#!/bin/sh
# Stands in for rpm-ostree (local-stack/os-stand-in.ts): rebase and status --json only.
S=${STATE}
case "$1" in
  rebase)
    shift
    [ "$1" = --experimental ] && shift
    if [ -f $S/fail-rebase ]; then echo "error: Creating importer: failed to pull $1 (told to fail)" >&2; exit 1; fi
    echo "$1" > $S/staged
    echo "Staging deployment... done" ;;
  status)
    # As rpm-ostree orders them: the staged deployment first, then the booted one.
    printf '{"deployments":['
    [ -f $S/staged ] && printf '{"booted":false,"staged":true,"container-image-reference":"%s"},' "$(cat $S/staged)"
    printf '{"booted":true,"staged":false,"container-image-reference":"%s"}]}\\n' "$(cat $S/booted)" ;;
  *) echo "rpm-ostree stand-in: $1 is not supported" >&2; exit 1 ;;
esac
`;

const SYSTEMCTL = `#!/bin/sh
# Stands in for systemctl reboot (local-stack/os-stand-in.ts); the rest goes to the real one.
if [ "$1" = reboot ]; then touch ${STATE}/reboot-requested; exit 0; fi
exec /usr/bin/systemctl "$@"
`;

export interface PoolNodeHost {
  host: SshHost;
  /** Named after the host. */
  node: string;
}

export interface NodeStandIns {
  nodes: PoolNodeHost[];
  /** The image the node booted (without rpm-ostree's transport prefix). */
  bootedImage(node: string): Promise<string>;
  /** The next rebases on this node fail (until `failRebase(node, false)`). */
  failRebase(node: string, on: boolean): Promise<void>;
  /** Its next boots come back on the old image, as a failed boot that rolls back. */
  failBoot(node: string, on: boolean): Promise<void>;
  /** How many of the nodes are unavailable now (NotReady or cordoned). */
  unavailable(): Promise<number>;
  stop(): Promise<void>;
}

async function must(host: SshHost, script: string): Promise<string> {
  const r = await host.exec(['sh', '-c', script]);
  if (r.code !== 0)
    throw new Error(`${host.name}: ${script.split('\n')[0]}: exit ${r.code}: ${r.stderr}`);
  return r.stdout;
}

async function install(host: SshHost, image: string): Promise<void> {
  await must(
    host,
    [
      `mkdir -p ${STATE}`,
      `[ -f ${STATE}/booted ] || echo '${OSTREE_PREFIX}${image}' > ${STATE}/booted`,
      'mountpoint -q /usr/local/sbin || mount -n -t tmpfs -o mode=755 tmpfs /usr/local/sbin',
      `cat > /usr/local/sbin/rpm-ostree <<'EOF'\n${RPM_OSTREE}EOF`,
      `cat > /usr/local/sbin/systemctl <<'EOF'\n${SYSTEMCTL}EOF`,
      'chmod 755 /usr/local/sbin/rpm-ostree /usr/local/sbin/systemctl',
    ].join('\n'),
  );
}

async function createUnlessPresent(core: CoreV1Api, body: V1Node): Promise<void> {
  await core.createNode({ body }).catch((err: unknown) => {
    if (statusCode(err) !== 409) throw err; // there already: left as it is
  });
}

async function setReady(
  core: CoreV1Api,
  node: string,
  ready: boolean,
  notReadyReason = 'NodeRebooting',
): Promise<void> {
  const now = new Date().toISOString();
  await core.patchNodeStatus(
    {
      name: node,
      body: {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: ready ? 'True' : 'False',
              reason: ready ? 'KubeletReady' : notReadyReason,
              message: 'stand-in kubelet (local-stack/os-stand-in.ts)',
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      },
    },
    MERGE_PATCH,
  );
}

/**
 * Registers each host as a Node (labels, zone, kubelet version as the test chooses), booted on
 * `image`, and starts playing the kubelet and the reboots.
 */
export async function startNodeStandIns(
  core: CoreV1Api,
  hosts: SshHost[],
  options: {
    image: string;
    kubeletVersion: string;
    labels: Record<string, string>;
    zones: string[];
    /** Hosts that keep their disks (`hostflow start`): their Nodes stay, NotReady, at stop. */
    keep?: boolean;
  },
): Promise<NodeStandIns> {
  const nodes = hosts.map((host) => ({ host, node: host.name }));
  for (const [i, { host, node }] of nodes.entries()) {
    await install(host, options.image);
    const body = {
      metadata: {
        name: node,
        labels: { ...options.labels, [ZONE_LABEL]: options.zones[i % options.zones.length]! },
      },
    };
    // A kept host's Node is its own from the last start, as a rebooted machine's kubelet finds
    // it: left as the engine last wrote it (a rollout may be updating it, under a Lock).
    if (options.keep) await createUnlessPresent(core, body);
    else await core.createNode({ body });
    await core.patchNodeStatus(
      {
        name: node,
        body: {
          status: {
            addresses: [
              { type: 'InternalIP', address: host.address },
              { type: 'Hostname', address: node },
            ],
            nodeInfo: { kubeletVersion: options.kubeletVersion },
          },
        },
      },
      MERGE_PATCH,
    );
    await setReady(core, node, true);
  }

  let stopped = false;
  const rebooting = new Set<string>();
  const reboot = async ({ host, node }: PoolNodeHost) => {
    await setReady(core, node, false);
    for (const pid of await netnsPids(host.name)) {
      try {
        process.kill(pid, 'SIGKILL'); // the power goes: sshd and every session with it
      } catch {
        // already gone
      }
    }
    await waitFor(
      `${node} to come back`,
      async () => (await sshBanner(host.address, 1000)) || undefined,
      {
        timeoutMs: 60_000,
        intervalMs: 200,
      },
    );
    await must(
      host,
      `cd ${STATE} && if [ -f staged ] && [ ! -f fail-boot ]; then mv staged booted; else rm -f staged; fi; rm -f reboot-requested`,
    );
    await install(host, options.image); // a fresh mount namespace: the stand-ins again
    await setReady(core, node, true);
  };
  const loop = (async () => {
    while (!stopped) {
      for (const n of nodes) {
        if (rebooting.has(n.node)) continue;
        const asked = await n.host.exec(['test', '-f', `${STATE}/reboot-requested`]);
        if (asked.code !== 0) continue;
        rebooting.add(n.node);
        void reboot(n).finally(() => rebooting.delete(n.node));
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  })();

  const byName = (node: string) => nodes.find((n) => n.node === node)!.host;
  const flag = (node: string, name: string, on: boolean) =>
    must(byName(node), on ? `touch ${STATE}/${name}` : `rm -f ${STATE}/${name}`).then(
      () => undefined,
    );
  return {
    nodes,
    bootedImage: async (node) =>
      (await must(byName(node), `cat ${STATE}/booted`)).trim().replace(OSTREE_PREFIX, ''),
    failRebase: (node, on) => flag(node, 'fail-rebase', on),
    failBoot: (node, on) => flag(node, 'fail-boot', on),
    async unavailable() {
      const list = await core.listNode();
      const ours = new Set(nodes.map((n) => n.node));
      return list.items.filter(
        (n) =>
          ours.has(n.metadata!.name!) &&
          (n.spec?.unschedulable ||
            n.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True'),
      ).length;
    },
    async stop() {
      stopped = true;
      await loop;
      for (const { node } of nodes) {
        if (options.keep) await setReady(core, node, false, 'KubeletStopped');
        else await core.deleteNode({ name: node }).catch(() => undefined);
      }
    },
  };
}
