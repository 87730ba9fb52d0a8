// A hostile tenant's custom actions against the runner's isolation (issue 37, item 6), through
// the project's own entry points: the tenant creates ConfigMaps of shell scripts and
// ClusterOperations on its Provisionings' clusters; a real worker and bridge serve them, each step
// a runner Job on the suite's one kubelet, the builtin steps the kubespray stand-in over the real
// release.
//   - Planted files: a shell pre-hook plants group_vars/all.yml and host_vars/ (their
//     ansible_ssh_common_args a ProxyCommand that writes a proof file on this machine), .facts/,
//     an ansible.cfg, symlinks and a FIFO at the bundle's names, in everything it can write (the
//     bundle's folder, its working directory, /tmp, $HOME), and upgrade-cluster.yml follows. No
//     tenant command runs outside its Job: no proof file appears (nor the file a symlink would
//     have had the engine write); the builtin step succeeds (the ProxyCommand would have failed
//     its every connection); the next operation on the cluster finds none of the plants and
//     upgrades again; the worker's own folder holds nothing but its copies of the logs.
//   - A run's reach: from inside (its log says what it found), no service-account token, none of
//     the worker's environment or files, none of another cluster's (whose run is in flight, its
//     bundle Secret in the same namespace); and from its Job and Pod in the API server: no token,
//     only its own bundle Secret mounted, nothing from the environment of the worker.
//   - Its NetworkPolicy as the runner creates it (no network policy engine runs here, so it is
//     checked as written, as deploy-manifests checks the engine's own policies): it selects exactly
//     that run's pod, admits nothing in, and lets it out only to its own nodes' addresses on TCP 22.
// On the code before fef73ab, a custom action ran in bubblewrap with its cluster's directory on
// the worker as its writable working directory, and the builtin cluster.yml or upgrade-cluster.yml
// ran ansible on the worker with its inventory in that directory. The FIFO put in place of
// group_vars/k8s_cluster.yml blocks the worker's event loop in the builtin step's synchronous
// write of it: the step never ends, the worker serves nothing more, and the FIFO is there for the
// next worker too (without the FIFO, the planted group_vars/all.yml gives ansible on the worker
// the ProxyCommand: the proof file appears and the builtin step fails). No runner Job, Pod or
// NetworkPolicy existed there, so the second test's checks from the API server fail too, and its
// script finds itself running as uid 65534, not 1000.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { NetworkingV1Api, type V1NetworkPolicy, type V1Pod } from '@kubernetes/client-node';
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RUN_LABEL } from '../../activities/runner/manifests.js';
import { waitFor } from '../../local-stack/process.js';
import { registerBareMetalHosts, type BareMetalHosts } from '../support/baremetal.js';
import { clusterOperations, installCluster } from '../support/cluster-operations.js';
import {
  engineEnv,
  startBridge,
  startWorker,
  tearDown,
  type EngineProcess,
} from '../support/engine.js';
import { runnerEnv, testEnv, uniqueSuffix } from '../support/env.js';
import { kubesprayWorkerEnv } from '../support/kubespray.js';
import { runnerSelector } from '../support/runner-jobs.js';
import { createScope, type TestScope } from '../support/scope.js';

const sfx = uniqueSuffix();
const ALPHA = 'cluster-alpha';
const BETA = 'cluster-beta';
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;
let alpha: ReturnType<typeof clusterOperations>;
let beta: ReturnType<typeof clusterOperations>;
/** The worker's own folder (its copies of the runs' logs). */
let workerDir: string;
let workerEnv: NodeJS.ProcessEnv;

/** What the ProxyCommand writes, and what a symlink would have had the engine write: here. */
const proof = join(testEnv('stateDir'), `hostile-proof-${sfx}`);
const linkProof = `${proof}.through-link`;

/** The plants, relative to each folder the pre-hook can write. */
const PLANTS = [
  'group_vars/all.yml',
  'host_vars/master.yml',
  'host_vars/worker.yml',
  '.facts/master',
  'master',
  'ansible.cfg',
  'group_vars/k8s_cluster.yml',
  'inventory.ini',
  'known_hosts',
  'extra-vars.json',
];

const PROXY = `-o ProxyCommand='touch ${proof}'`;
const plantScript = () => `set -u
proxy="${PROXY}"
planted=0
for dir in "$PWD" "$(dirname "$HOSTFLOW_INVENTORY")" /tmp "\${HOME:-/}"; do
  if ! (mkdir -p "$dir/group_vars" "$dir/host_vars" "$dir/.facts") 2>/dev/null; then
    echo "cannot write $dir"; continue
  fi
  printf 'ansible_ssh_common_args: "%s"\\n' "$proxy" > "$dir/group_vars/all.yml"
  for host in master worker; do
    printf 'ansible_ssh_common_args: "%s"\\n' "$proxy" > "$dir/host_vars/$host.yml"
    # A fact cache, as jsonfile keeps one (kubespray's ansible.cfg has it in /tmp).
    printf '{"ansible_ssh_common_args": "%s"}\\n' "$proxy" > "$dir/.facts/$host"
    printf '{"ansible_ssh_common_args": "%s"}\\n' "$proxy" > "$dir/$host"
  done
  printf '[ssh_connection]\\nssh_args = %s\\n' "$proxy" > "$dir/ansible.cfg"
  # A FIFO in place of the group vars the engine wrote there before each run, and links where
  # it writes the bundle's files.
  rm -f "$dir/group_vars/k8s_cluster.yml" 2>/dev/null
  mkfifo "$dir/group_vars/k8s_cluster.yml" 2>/dev/null
  for name in inventory.ini known_hosts extra-vars.json; do ln -sf "${linkProof}" "$dir/$name"; done
  echo "planted in $dir"; planted=$((planted + 1))
done
[ "$planted" -gt 0 ]
`;

/** Fails naming each plant it finds where the run can look. */
const inspectScript = () => `set -u
found=0
for dir in "$PWD" "$(dirname "$HOSTFLOW_INVENTORY")" /tmp "\${HOME:-/}"; do
  for plant in ${PLANTS.filter((p) => !['inventory.ini', 'known_hosts', 'extra-vars.json', 'group_vars/k8s_cluster.yml'].includes(p)).join(' ')}; do
    if [ -e "$dir/$plant" ] || [ -L "$dir/$plant" ]; then echo "found $dir/$plant"; found=1; fi
  done
  # The bundle's own files are Kubernetes' links into its Secret volume; nothing else may be one.
  for name in group_vars/k8s_cluster.yml inventory.ini known_hosts extra-vars.json; do
    target=$(readlink "$dir/$name" 2>/dev/null || true)
    case "$target" in ''|..data/*) ;; *) echo "found $dir/$name -> $target"; found=1 ;; esac
    if [ -p "$dir/$name" ]; then echo "found a FIFO at $dir/$name"; found=1; fi
  done
done
[ "$found" = 0 ] && echo clean
`;

/** What a run can reach, said in its log; `beta` is the other cluster, `worker` the engine's. */
const lookScript = (other: { addresses: string[]; logs: string }, engine: string[]) => `set -u
echo "uid $(id -u)"
for path in /var/run/secrets /run/secrets /var/run/secrets/kubernetes.io/serviceaccount/token; do
  [ -e "$path" ] && echo "reachable: $path"
done
find / -xdev \\( -path /proc -o -path /sys \\) -prune -o -name token -path '*serviceaccount*' -print 2>/dev/null | sed 's/^/reachable: /'
for name in $(env | cut -d= -f1 | sort -u); do echo "env: $name"; done
for value in ${engine.map((v) => `'${v}'`).join(' ')}; do
  env | grep -qF -- "$value" && echo "the worker's setting is in its environment: $value"
  grep -qsF -- "$value" /proc/[0-9]*/environ && echo "the worker's setting is in a process's environment: $value"
  [ -e "$value" ] && echo "reachable: $value"
done
echo "processes: $(ls -d /proc/[0-9]* | wc -l)"
grep -qs 'dist/workers/worker.js' /proc/[0-9]*/cmdline && echo 'the worker is in sight'
[ -e '${other.logs}' ] && echo 'reachable: the other cluster log copies'
for address in ${other.addresses.join(' ')}; do
  grep -rqsF --exclude=action.sh "$address" /run /tmp /etc /var /home "\${HOME:-/}" && echo "the other cluster's address is in a file: $address"
done
echo "mounts: $(grep -c ' /run/hostflow' /proc/self/mounts) at /run/hostflow"
ls /run/hostflow | sed 's/^/bundle: /'
sed -n 's/.*ansible_host=\\([^ ]*\\).*/inventory: \\1/p' "$HOSTFLOW_INVENTORY" | sort -u
echo looked
sleep 8
`;

beforeAll(async () => {
  scope = await createScope('runiso');
  metal = await registerBareMetalHosts(scope, { count: 4, sfx });
  const kubespray = kubesprayWorkerEnv(sfx);
  workerDir = kubespray.HOSTFLOW_PROVISIONING_DIR;
  workerEnv = {
    ...engineEnv(scope),
    ...kubespray,
    HOSTFLOW_BAREMETAL_NAMESPACES: metal.namespace,
  };
  worker = await startWorker(scope, workerEnv);
  bridge = await startBridge(scope);
  await installCluster(scope, metal, { name: 'alpha', cluster: ALPHA, workers: [1] });
  const master = (i: number) => [{ master: { 'mac-address': metal.macs[i]! } }];
  const worker3 = [{ worker: { 'mac-address': metal.macs[3]! } }];
  await installCluster(scope, metal, {
    name: 'beta',
    cluster: BETA,
    workers: [],
    spec: { masters: master(2), workers: worker3 },
  });
  alpha = clusterOperations(scope, metal, { name: 'alpha', cluster: ALPHA });
  beta = clusterOperations(scope, metal, { name: 'beta', cluster: BETA });
}, 240_000);

afterAll(async () => {
  rmSync(proof, { force: true });
  rmSync(linkProof, { force: true });
  await tearDown([bridge, worker], metal, scope);
});

const fromMap = (name: string, action: string) => ({
  actionType: 'shell',
  actionSource: 'configmap',
  actionSourceRef: { name },
  action,
});
const runnerNamespace = () => runnerEnv().HOSTFLOW_RUNNER_NAMESPACE!;
const ofCluster = (cluster: string) => runnerSelector(`${scope.namespace}/${cluster}`);

/** Every file under `dir` that is not a regular file, or not a log. */
function notLogs(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((path) => {
    const stat = lstatSync(join(dir, path));
    if (stat.isDirectory()) return false;
    return !stat.isFile() || !/^\.logs\/.*\.log$/.test(path);
  });
}

describe("a hostile tenant's custom actions against the runner's isolation", () => {
  it('plant files for a builtin step: no tenant command runs outside its Job, and nothing stays', async () => {
    await scope.kube.core.createNamespacedConfigMap({
      namespace: scope.namespace,
      body: {
        metadata: { name: 'plants' },
        data: { 'plant.sh': plantScript(), 'inspect.sh': inspectScript() },
      },
    });
    await alpha.operate('planted', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: '1.35.1' },
      preHook: [fromMap('plants', 'plant.sh')],
    });
    const planted = await alpha.ended('planted');
    expect(planted.steps!.map((s) => [s.name, s.action, s.phase])).toEqual([
      ['preHook[0]', 'plants/plant.sh', 'Succeeded'],
      ['action', 'upgrade-cluster.yml', 'Succeeded'],
    ]);
    expect(planted.phase).toBe('Succeeded');
    // It planted in its own /tmp; its bundle was read-only.
    const plantLog = readFileSync(planted.steps![0]!.log!, 'utf8');
    expect(plantLog).toContain('planted in /tmp');
    expect(plantLog).toContain('cannot write /run/hostflow');
    expect(existsSync(proof)).toBe(false);
    expect(existsSync(linkProof)).toBe(false);
    expect(await alpha.versions()).toEqual(['1.35.1', '1.35.1', '', '']);

    // The next operation on the cluster finds none of it, and upgrades again.
    await alpha.operate('after', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: '1.35.2' },
      preHook: [fromMap('plants', 'inspect.sh')],
    });
    const after = await alpha.ended('after');
    expect(readFileSync(after.steps![0]!.log!, 'utf8').trim().split('\n')).toEqual(['clean']);
    expect(after.phase).toBe('Succeeded');
    expect(await alpha.versions()).toEqual(['1.35.2', '1.35.2', '', '']);
    expect(existsSync(proof)).toBe(false);
    expect(existsSync(linkProof)).toBe(false);
    // The worker's own folder holds its copies of the runs' logs, and nothing else.
    expect(notLogs(workerDir)).toEqual([]);
  }, 180_000);

  it("reaches no service-account token, nothing of the worker's, and nothing of another cluster's", async () => {
    const engineValues = [
      workerEnv.TEMPORAL_ADDRESS!,
      workerEnv.KUBECONFIG!,
      workerEnv.HOSTFLOW_TASK_QUEUE!,
      workerEnv.HOSTFLOW_WORKFLOW_BUNDLE!,
      workerDir,
    ];
    const betaAddresses = metal.pool.hosts.slice(2).map((host) => host.address);
    const betaLogs = join(workerDir, '.logs', scope.namespace, BETA);
    await scope.kube.core.createNamespacedConfigMap({
      namespace: scope.namespace,
      body: {
        metadata: { name: 'look' },
        data: {
          'look.sh': lookScript({ addresses: betaAddresses, logs: betaLogs }, engineValues),
          'wait.sh': 'sleep 30\n',
        },
      },
    });
    const { batch, core, kc } = scope.kube;
    const networking = kc.makeApiClient(NetworkingV1Api);
    const namespace = runnerNamespace();
    // The other cluster's run first, so that its bundle Secret exists while alpha's looks.
    await beta.operate('waiting', fromMap('look', 'wait.sh'));
    const betaJob = await waitFor('the other cluster runner Job', async () => {
      const jobs = await batch.listNamespacedJob({ namespace, labelSelector: ofCluster(BETA) });
      return jobs.items[0];
    });
    await alpha.operate('looking', fromMap('look', 'look.sh'));
    // What alpha's run is, as the API server has it, while it runs.
    const seen = await waitFor(
      "alpha's runner Pod to run",
      async () => {
        const jobs = await batch.listNamespacedJob({ namespace, labelSelector: ofCluster(ALPHA) });
        const job = jobs.items[0];
        if (!job) return undefined;
        const pods = await core.listNamespacedPod({
          namespace,
          labelSelector: `batch.kubernetes.io/job-name=${job.metadata!.name!}`,
        });
        const pod = pods.items[0];
        if (pod?.status?.phase !== 'Running') return undefined;
        const policy = await networking.readNamespacedNetworkPolicy({
          name: job.metadata!.name!,
          namespace,
        });
        const bundle = await core.readNamespacedSecret({ name: job.metadata!.name!, namespace });
        const all = await core.listNamespacedPod({ namespace });
        return { job, pod, policy, bundle, pods: all.items };
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    const looked = await alpha.ended('looking');
    expect(looked.phase).toBe('Succeeded');
    expect((await beta.ended('waiting')).phase).toBe('Succeeded');

    // From inside: what its log says it found.
    const lines = readFileSync(looked.steps![0]!.log!, 'utf8').trim().split('\n');
    expect(lines).toContain('looked');
    expect(lines).toContain('uid 1000');
    expect(
      lines.filter((l) => /reachable|in sight|worker's setting|other cluster/.test(l)),
    ).toEqual([]);
    const envNames = lines.filter((l) => l.startsWith('env: ')).map((l) => l.slice(5));
    const expected =
      /^(PATH|HOME|HOSTNAME|LANG|LC_\w+|PWD|SHLVL|_|ANSIBLE_\w+|KUBERNETES_\w+|HOSTFLOW_(INVENTORY|SSH_CONFIG|EXTRA_VARS))$/;
    expect(envNames.filter((name) => !expected.test(name))).toEqual([]);
    expect(lines).toContain('mounts: 1 at /run/hostflow');
    const alphaAddresses = metal.pool.hosts.slice(0, 2).map((h) => h.address);
    expect(lines.filter((l) => l.startsWith('inventory: ')).sort()).toEqual(
      alphaAddresses.map((a) => `inventory: ${a}`).sort(),
    );

    // From the API server: the Job and its Pod get no token, no Secret but their own bundle,
    // and nothing of the worker's environment.
    const runName = seen.job.metadata!.name!;
    expect(runName).not.toBe(betaJob.metadata!.name);
    for (const spec of [seen.job.spec!.template.spec!, seen.pod.spec!]) {
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.enableServiceLinks).toBe(false);
      expect(spec.hostNetwork ?? false).toBe(false);
      expect(spec.hostPID ?? false).toBe(false);
      expect(spec.containers).toHaveLength(1);
      expect(spec.initContainers ?? []).toEqual([]);
      expect(
        spec.volumes!.map((v) => [v.name, v.secret?.secretName ?? (v.emptyDir ? 'emptyDir' : v)]),
      ).toEqual([
        ['bundle', runName],
        ['tmp', 'emptyDir'],
      ]);
      const container = spec.containers[0]!;
      expect(container.envFrom ?? []).toEqual([]);
      for (const variable of container.env ?? []) {
        expect(variable.valueFrom).toBeUndefined();
        expect(variable.name).toMatch(expected);
        for (const value of engineValues) expect(variable.value).not.toContain(value);
      }
      expect(container.volumeMounts!.map((m) => [m.mountPath, m.readOnly ?? false])).toEqual([
        ['/run/hostflow', true],
        ['/tmp', false],
      ]);
      expect(container.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    }
    // Its bundle is its own: the Job owns it, and it holds no other cluster's address.
    const { bundle } = seen;
    expect(bundle.metadata!.ownerReferences).toMatchObject([
      { kind: 'Job', name: runName, uid: seen.job.metadata!.uid },
    ]);
    // The tenant's own script names those addresses, to look for them: all but it. Only the
    // addresses found are compared, so a failure prints no key of the bundle.
    const bundleText = Object.entries(bundle.data ?? {})
      .filter(([key]) => key !== 'action.sh')
      .map(([, v]) => Buffer.from(v, 'base64').toString('utf8'))
      .join('\n');
    expect(betaAddresses.filter((address) => bundleText.includes(address))).toEqual([]);

    checkPolicy(seen.policy, seen.pod, seen.pods, alphaAddresses);
  }, 180_000);
});

/**
 * The run's NetworkPolicy, as written: it selects that run's pod and no other pod of the runner
 * namespace, admits nothing in, and lets out only TCP 22 to its own nodes' addresses.
 */
function checkPolicy(policy: V1NetworkPolicy, pod: V1Pod, pods: V1Pod[], nodes: string[]) {
  const runName = pod.metadata!.labels!['batch.kubernetes.io/job-name']!;
  const selector = policy.spec!.podSelector!;
  expect(selector).toEqual({ matchLabels: { [RUN_LABEL]: runName } });
  const selects = (p: V1Pod) =>
    Object.entries(selector.matchLabels!).every(([k, v]) => p.metadata!.labels?.[k] === v);
  expect(pods.filter(selects).map((p) => p.metadata!.name)).toEqual([pod.metadata!.name]);
  expect(pods.length).toBeGreaterThan(1); // the other cluster's run was there, not selected
  expect(policy.spec!.policyTypes).toEqual(['Ingress', 'Egress']);
  expect(policy.spec!.ingress ?? []).toEqual([]);
  // As written (`to`), not as the client's types name anything.
  expect(policy.spec!.egress).toEqual([
    {
      to: nodes.map((address) => ({ ipBlock: { cidr: `${address}/32` } })),
      ports: [{ protocol: 'TCP', port: 22 }],
    },
  ]);
  expect(policy.metadata!.ownerReferences).toMatchObject([{ kind: 'Job', name: runName }]);
}
