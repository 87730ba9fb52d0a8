// A ClusterOperation's custom actions (a tenant's own playbook and shell script from a ConfigMap,
// each run on its cluster's nodes from a runner Job of its own) and destructive ones
// (remove-node.yml and reset.yml, only with the cluster named). Real bridge and worker processes,
// real SSH hosts as metal3 BareMetalHosts, real ansible-playbook in the runner image on the
// suite's local kubelet; the install itself is the project's kubespray stand-in over the real
// release (see cluster-operation.test.ts for why). The script checks from inside its runner pod
// that the worker's environment, files, credentials and API server are out of reach, and that it
// runs unprivileged on a read-only bundle. The stand-in's marker of an installed node is
// /var/tmp/hostflow-stand-in-kubelet.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import type { BareMetalHosts } from './support/baremetal.js';
import {
  clusterOperations,
  installCluster,
  startOperationStack,
} from './support/cluster-operations.js';
import { type EngineProcess, tearDown } from './support/engine.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';
import type { TestScope } from './support/scope.js';

const sfx = uniqueSuffix();
const CLUSTER = 'cluster-custom';
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;
let ops: ReturnType<typeof clusterOperations>;

/** The API server's port, which the runner must not reach. */
const apiPort = () => new URL(kube().kc.getCurrentCluster()!.server).port;
/** This machine's IPv4 addresses: the API server's port must be shut at every one from the pod. */
const machineAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .filter((nic) => nic?.family === 'IPv4')
    .map((nic) => nic!.address);

/**
 * Fails, naming what it saw, unless it runs confined to its runner pod: none of the worker's
 * environment or files, no service-account token, the API server's port shut at the pod's own
 * loopback, its gateway (the machine) and every address of the machine, uid 1000 with no
 * capabilities, its bundle mounted read-only. Its nodes' sshd is in reach, by the same probe.
 */
const checkRunner = () => `set -eu
for name in $(env | cut -d= -f1); do
  case "$name" in
    PATH|HOME|LANG|HOSTNAME|PWD|SHLVL|_|ANSIBLE_*|HOSTFLOW_INVENTORY|HOSTFLOW_SSH_CONFIG|HOSTFLOW_EXTRA_VARS) ;;
    # The kubernetes Service's address, which the kubelet gives every pod: no credential.
    KUBERNETES_SERVICE_HOST|KUBERNETES_SERVICE_PORT|KUBERNETES_SERVICE_PORT_HTTPS|KUBERNETES_PORT|KUBERNETES_PORT_443_TCP*) ;;
    *) echo "the worker's environment leaked in: $name"; exit 1 ;;
  esac
done
[ "$(id -u):$(id -g)" = 1000:1000 ] || { echo "runs as $(id -u):$(id -g)"; exit 1; }
caps=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
[ "$caps" = 0000000000000000 ] || { echo "has capabilities $caps"; exit 1; }
[ ! -e '${testEnv('kubeconfig')}' ] || { echo 'the kubeconfig is in reach'; exit 1; }
[ ! -e /var/run/secrets/kubernetes.io/serviceaccount ] || { echo 'a service-account token is in reach'; exit 1; }
[ -s /run/hostflow/inventory.ini ] || { echo 'no bundle at /run/hostflow'; exit 1; }
opts=$(awk '$2 == "/run/hostflow" { print $4 }' /proc/mounts)
case ",$opts," in *,ro,*) ;; *) echo "the bundle is mounted $opts"; exit 1 ;; esac
if touch /run/hostflow/written 2>/dev/null || (echo x >> /run/hostflow/inventory.ini) 2>/dev/null; then
  echo 'the bundle is writable'; exit 1
fi
reaches() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
gw=$(awk '$2 == "00000000" { print $3; exit }' /proc/net/route)
gw=$(printf '%d.%d.%d.%d' 0x\${gw:6:2} 0x\${gw:4:2} 0x\${gw:2:2} 0x\${gw:0:2})
for address in 127.0.0.1 "$gw" ${machineAddresses().join(' ')}; do
  if reaches "$address" ${apiPort()}; then echo "the API server is in reach at $address"; exit 1; fi
done
# Nor through the kubernetes Service. Its address is off this machine (no kube-proxy here), where
# the network may accept any connection: only an API server's answer counts.
api_answers() {
  python3 - "$1" "$2" <<'PY'
import socket, ssl, sys
try:
    raw = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    with tls.wrap_socket(raw) as conn:
        conn.settimeout(5)
        conn.sendall(b'GET /version HTTP/1.0\\r\\n\\r\\n')
        answer = conn.recv(4096)
except OSError:
    sys.exit(1)
sys.exit(0 if b'"major"' in answer or b'"kind"' in answer else 1)
PY
}
if [ -n "\${KUBERNETES_SERVICE_HOST:-}" ] && api_answers "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT"; then
  echo "an API server answers at the kubernetes Service, $KUBERNETES_SERVICE_HOST"; exit 1
fi
# Its own nodes are, directly, as the installer.
for ip in $(sed -n 's/.*ansible_host=\\([^ ]*\\).*/\\1/p' "$HOSTFLOW_INVENTORY" | sort -u); do
  reaches "$ip" 22 || { echo "node $ip is out of reach"; exit 1; }
  ssh -F "$HOSTFLOW_SSH_CONFIG" "$ip" "echo $ip > /var/tmp/hostflow-custom-pre"
done
echo "confined to its runner pod (gateway $gw)"
`;

const LABEL_NODES = `- name: Label the nodes
  hosts: k8s_cluster
  gather_facts: false
  become: true
  tasks:
    - name: Write the label
      ansible.builtin.copy:
        dest: /var/tmp/hostflow-custom-label
        content: "{{ label }}\\n"
        mode: '0644'
`;

beforeAll(async () => {
  ({ scope, metal, worker, bridge } = await startOperationStack('clcust', 2, sfx));
  await scope.kube.core.createNamespacedConfigMap({
    namespace: scope.namespace,
    body: {
      metadata: { name: 'actions' },
      data: {
        'check-runner.sh': checkRunner(),
        'label-nodes.yml': LABEL_NODES,
        'read-kubeconfig.sh': `cat '${testEnv('kubeconfig')}'\n`,
      },
    },
  });
  await installCluster(scope, metal, { name: 'custom', cluster: CLUSTER, workers: [1] });
  ops = clusterOperations(scope, metal, { name: 'custom', cluster: CLUSTER });
}, 240_000);

afterAll(() => tearDown([bridge, worker], metal, scope));

const fromActions = { actionSource: 'configmap', actionSourceRef: { name: 'actions' } };
const onEachNode = (command: string) =>
  Promise.all(
    metal.pool.hosts.map(async (host) => (await host.exec(['sh', '-c', command])).stdout.trim()),
  );

describe("a ClusterOperation's custom actions", () => {
  it('runs a playbook from a ConfigMap between a shell pre-hook confined to its runner pod and a post-hook', async () => {
    await ops.operate('labelled', {
      ...fromActions,
      action: 'label-nodes.yml',
      extraVars: { label: 'blue' },
      preHook: [{ ...fromActions, actionType: 'shell', action: 'check-runner.sh' }],
      postHook: [{ action: 'cluster.yml' }],
    });
    const done = await ops.ended('labelled');
    expect(done.steps!.map((s) => [s.name, s.action, s.phase])).toEqual([
      ['preHook[0]', 'actions/check-runner.sh', 'Succeeded'],
      ['action', 'actions/label-nodes.yml', 'Succeeded'],
      ['postHook[0]', 'cluster.yml', 'Succeeded'],
    ]);
    expect(done.phase).toBe('Succeeded');
    expect(readFileSync(done.steps![0]!.log!, 'utf8')).toContain('confined to its runner pod');
    expect(await onEachNode('cat /var/tmp/hostflow-custom-label')).toEqual(['blue', 'blue']);
    // The script reached each node at its own address, from its pod.
    const ips = await onEachNode('cat /var/tmp/hostflow-custom-pre');
    expect(new Set(ips).size).toBe(2);
  }, 180_000);

  it("takes the tenant's own variables, but none that would have ansible act on the worker", async () => {
    await ops.operate('worker-vars', {
      ...fromActions,
      action: 'label-nodes.yml',
      extraVars: { label: 'red', download_run_once: true, kubectl_localhost: true },
    });
    const refused = await ops.ended('worker-vars');
    const why = 'is refused for every action: it would have ansible act on the worker that runs it';
    expect(refused.message).toBe(
      `Nothing was run: spec.extraVars: download_run_once ${why}, not on the nodes; ` +
        `spec.extraVars: kubectl_localhost ${why}, not on the nodes`,
    );
    expect([refused.phase, refused.steps ?? [], refused.startTime]).toEqual([
      'Failed',
      [],
      undefined,
    ]);
    expect(
      await onEachNode('cat /var/tmp/hostflow-custom-label 2>/dev/null || true'),
    ).not.toContain('red');
  }, 120_000);

  it("fails a script that reaches for the worker's files, and refuses an action it cannot find", async () => {
    await ops.operate('snooping', {
      ...fromActions,
      actionType: 'shell',
      action: 'read-kubeconfig.sh',
    });
    const snooped = await ops.ended('snooping');
    expect(snooped).toMatchObject({ phase: 'Failed', failedStep: 'action' });
    expect(snooped.message).toMatch(
      /^action failed: shell read-kubeconfig\.sh \(ConfigMap actions\) exited with code 1 /,
    );
    expect(readFileSync(snooped.log!, 'utf8')).toContain('No such file or directory');

    await ops.operate('missing', { ...fromActions, action: 'nope.yml' });
    const missing = await ops.ended('missing');
    expect(missing.phase).toBe('Failed');
    expect(missing.message).toBe(
      `Nothing was run: ConfigMap ${scope.namespace}/actions has no key nope.yml (it has ` +
        'check-runner.sh, label-nodes.yml, read-kubeconfig.sh)',
    );
  }, 180_000);

  it('takes Kubernetes off nodes only when the cluster is named, and installs them again', async () => {
    const refusals: Array<[string, Parameters<typeof ops.operate>[1], string]> = [
      [
        'unconfirmed',
        { action: 'reset.yml' },
        'spec.confirm is missing: reset.yml takes Kubernetes off nodes; name the cluster',
      ],
      [
        'other-cluster',
        { action: 'reset.yml', confirm: 'production' },
        `reset.yml takes Kubernetes off nodes: set spec.confirm to the cluster's name, ${CLUSTER}`,
      ],
      [
        'control-plane',
        { action: 'remove-node.yml', confirm: CLUSTER, nodes: ['master'] },
        `spec.nodes: master is not a worker of cluster ${CLUSTER} (its workers: worker)`,
      ],
    ];
    for (const [name, spec, why] of refusals) {
      await ops.operate(name, spec);
      expect((await ops.ended(name)).message).toBe(`Nothing was run: ${why}`);
    }
    const installed = () =>
      onEachNode('test -e /var/tmp/hostflow-stand-in-kubelet && echo yes || echo no');
    expect(await installed()).toEqual(['yes', 'yes']);

    await ops.operate('remove-worker', {
      action: 'remove-node.yml',
      confirm: CLUSTER,
      nodes: ['worker'],
    });
    expect((await ops.ended('remove-worker')).phase).toBe('Succeeded');
    expect(await installed()).toEqual(['yes', 'no']);
    await ops.operate('reset', { action: 'reset.yml', confirm: CLUSTER });
    expect((await ops.ended('reset')).phase).toBe('Succeeded');
    expect(await installed()).toEqual(['no', 'no']);
    // The Provisioning still holds the nodes: cluster.yml installs them again.
    await ops.operate('reinstall', { action: 'cluster.yml' });
    expect((await ops.ended('reinstall')).phase).toBe('Succeeded');
    expect(await installed()).toEqual(['yes', 'yes']);
  }, 240_000);
});
