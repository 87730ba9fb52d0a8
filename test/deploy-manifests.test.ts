// The production manifests (deploy/base and the example overlay) as kubectl renders them: the
// real API server accepts every object (server-side dry run, so admission and the CRDs' schemas
// run), and each Deployment is one a platform team can run: non-root, read-only root filesystem,
// probes, resources, replicas kept apart, a PodDisruptionBudget. RBAC is checked for real in
// deploy-rbac.test.ts.
import { beforeAll, describe, expect, it } from '@jest/globals';
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1NetworkPolicy,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1Role,
  V1RoleBinding,
  V1Service,
  V1ValidatingAdmissionPolicy,
} from '@kubernetes/client-node';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { join } from 'node:path';
import { DEFAULT_RUNNER_NAMESPACE, RUNNER_NAMESPACE_LABEL } from '../shared/runner-settings.js';
import { ENGINE_ENV, ENGINE_NODE_FLAGS, ENGINE_SCRIPTS } from '../local-stack/defaults.js';
import { ENGINE_RIGHTS_POLICY, engineIdentitiesOf } from '../local-stack/engine-rights.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { OTP_SETTING_NAMES } from '../otp-server/main.js';
import { DEFAULT_OTP_NAMESPACE } from '../platform-config/contract.js';
import { SETTING_NAMES } from '../runtime/settings.js';
import {
  kubectl,
  manifestFile,
  named,
  ofKind,
  renderManifests,
  type Manifest,
} from './support/manifests.js';

const ENGINE_NAMESPACE = 'multi-platform-controller';
const COMPONENTS = ['worker', 'bridge', 'otp'] as const;
/** Where Prometheus runs, as the NetworkPolicies admit it (an overlay patches it). */
const MONITORING_NAMESPACE = { 'kubernetes.io/metadata.name': 'monitoring' };

let objects: Manifest[];
const deployments = () => ofKind(objects, 'Deployment') as unknown as V1Deployment[];
const deploymentOf = (component: string) =>
  deployments().find(
    (d) => d.spec?.selector.matchLabels?.['app.kubernetes.io/component'] === component,
  )!;

beforeAll(async () => {
  objects = await renderManifests('deploy/overlays/example');
});

describe('the example overlay', () => {
  it('is accepted object by object by the API server (kubectl apply --dry-run=server)', async () => {
    // `kubectl apply -k` on a new cluster creates the Namespaces first, then what goes in them.
    // A dry run cannot, so they are applied for real first (idempotent).
    await kubectl(['apply', '-f', manifestFile(ofKind(objects, 'Namespace'))]);
    const { stdout } = await kubectl(['apply', '--dry-run=server', '-f', manifestFile(objects)]);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(objects.length);
    for (const line of lines)
      expect(line).toMatch(/ (created|configured|unchanged) \(server dry run\)$/);
    expect(new Set(objects.map((o) => o.kind))).toEqual(
      new Set([
        'CustomResourceDefinition',
        'Namespace',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
        'ServiceAccount',
        'ClusterRole',
        'ClusterRoleBinding',
        'Role',
        'RoleBinding',
        'ConfigMap',
        'Secret',
        'Service',
        'Deployment',
        'PodDisruptionBudget',
        'NetworkPolicy',
        'ResourceQuota',
      ]),
    );
    const crds = ofKind(objects, 'CustomResourceDefinition').map((c) => c.metadata.name);
    expect(crds.sort()).toEqual([
      'clusteroperations.hostflow.dev',
      'clusters.bpa.akraino.org',
      'hostflowmachines.infrastructure.hostflow.dev',
      'hostflowmachinetemplates.infrastructure.hostflow.dev',
      'locks.kotas.tech',
      'provisionings.bpa.akraino.org',
      'softwares.bpa.akraino.org',
    ]);
    expect(deployments().map((d) => d.spec!.template.spec!.containers[0]!.image)).toEqual(
      Array(3).fill('registry.example.com/platform/hostflow:1.0.0'),
    );
  });

  it('has a Temporal setup Job beside it: accepted by the API server, the engine’s Temporal Secret, no cluster token, non-root', async () => {
    const setup = await renderManifests('deploy/setup-temporal');
    const { stdout } = await kubectl(['apply', '--dry-run=server', '-f', manifestFile(setup)]);
    expect(stdout.trim()).toBe('job.batch/hostflow-setup-temporal created (server dry run)');
    const job = setup[0] as Manifest & {
      spec: { ttlSecondsAfterFinished?: number; template: { spec: V1PodSpec } };
    };
    expect(job.metadata.namespace).toBe(ENGINE_NAMESPACE);
    expect(job.spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    const pod = job.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    const [container] = pod.containers;
    expect(container!.args).toEqual(['dist/cli/hostflow.js', 'setup', 'temporal']);
    expect(container!.envFrom).toEqual([{ secretRef: { name: 'hostflow-temporal' } }]);
    expect(container!.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
  });

  it('has a TaskRun-only sibling that applies the taskruns family and nothing of the others', async () => {
    const only = await renderManifests('deploy/overlays/taskruns-only');
    await kubectl(['apply', '-f', manifestFile(ofKind(only, 'Namespace'))]);
    const { stdout } = await kubectl(['apply', '--dry-run=server', '-f', manifestFile(only)]);
    expect(stdout.trim().split('\n')).toHaveLength(only.length);
    expect(ofKind(only, 'CustomResourceDefinition')).toEqual([]);
    expect(ofKind(only, 'ValidatingAdmissionPolicy').map((p) => p.metadata.name)).toEqual([
      'engine-rights.hostflow.dev',
    ]);
    // Of the API groups, the core group and Tekton's alone.
    const groups = (ofKind(only, 'ClusterRole') as unknown as V1ClusterRole[]).flatMap((role) =>
      role.rules!.flatMap((rule) => rule.apiGroups!),
    );
    expect([...new Set(groups)].sort()).toEqual(['', 'tekton.dev']);
    const settings = ofKind(only, 'ConfigMap')[0] as Manifest & { data: Record<string, string> };
    expect(settings.data.HOSTFLOW_FAMILIES).toBe('taskruns');
  });

  it("holds no other project's CRD anywhere under deploy/: the stand-ins are the local stack's", () => {
    // Applied to a cluster that runs Tekton, Cluster API, the MCO or metal3, a reduced copy of
    // their CRD would replace theirs (and drop its conversion webhook).
    const groups = new Map<string, string>();
    for (const file of yamlFilesUnder(join(REPO_ROOT, 'deploy'))) {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
        const object = doc.toJS() as Manifest & { spec?: { group?: string } };
        if (object?.kind === 'CustomResourceDefinition') {
          groups.set(object.metadata.name, object.spec!.group!);
        }
      }
    }
    expect([...new Set(groups.values())].sort()).toEqual([
      'bpa.akraino.org',
      'hostflow.dev',
      'infrastructure.hostflow.dev',
      'kotas.tech',
    ]);
    const standIns = readdirSync(join(REPO_ROOT, 'local-stack/upstream-crds'));
    expect(standIns).toContain('tekton-taskrun.yaml');
  });

  it('runs each component as non-root on a read-only root filesystem, probed, sized, spread and budgeted', () => {
    expect(
      deployments()
        .map((d) => d.metadata!.name)
        .sort(),
    ).toEqual(['hostflow-bridge', 'hostflow-otp', 'hostflow-worker']);
    const budgets = ofKind(objects, 'PodDisruptionBudget') as unknown as V1PodDisruptionBudget[];
    for (const component of COMPONENTS) {
      const deployment = deploymentOf(component);
      const pod = deployment.spec!.template;
      const labels = pod.metadata!.labels!;
      expect(labels['app.kubernetes.io/component']).toBe(component);
      expect(deployment.spec!.replicas).toBeGreaterThanOrEqual(2);
      expect(pod.spec!.serviceAccountName).toBe(`hostflow-${component}`);
      expect(pod.spec!.securityContext).toMatchObject({ runAsNonRoot: true });
      expect(pod.spec!.securityContext!.runAsUser).toBeGreaterThan(0);
      const antiAffinity =
        pod.spec!.affinity!.podAntiAffinity!.preferredDuringSchedulingIgnoredDuringExecution!;
      expect(antiAffinity[0]!.podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
      expect(antiAffinity[0]!.podAffinityTerm.labelSelector!.matchLabels).toEqual({
        'app.kubernetes.io/component': component,
      });
      const [container, ...others] = pod.spec!.containers;
      expect(others).toEqual([]);
      expect(container!.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      // A read-only root still needs a writable /tmp (HOME in the image).
      const tmp = container!.volumeMounts!.find((m) => m.mountPath === '/tmp');
      expect(pod.spec!.volumes!.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
      expect(container!.resources!.requests).toHaveProperty('cpu');
      expect(container!.resources!.requests).toHaveProperty('memory');
      expect(container!.resources!.limits).toHaveProperty('memory');
      expect(container!.readinessProbe!.httpGet!.path).toBe('/readyz');
      expect(container!.livenessProbe!.httpGet!.path).toBe('/healthz');
      // Probes name a port the container declares.
      const ports = container!.ports!.map((p) => p.name);
      expect(ports).toContain(container!.readinessProbe!.httpGet!.port);
      expect(ports).toContain(container!.livenessProbe!.httpGet!.port);
      const budget = budgets.filter(
        (b) => b.spec!.selector!.matchLabels?.['app.kubernetes.io/component'] === component,
      );
      expect(budget).toHaveLength(1);
      expect(budget[0]!.spec!.minAvailable).toBe(1);
    }
  });

  it('gives each component its own ServiceAccount: the bridge only reads, the OTP service only its records, the worker Secrets only by name', () => {
    const accounts = ofKind(objects, 'ServiceAccount').map(
      (a) => `${a.metadata.namespace}/${a.metadata.name}`,
    );
    expect(accounts.sort()).toEqual(
      COMPONENTS.map((c) => `${ENGINE_NAMESPACE}/hostflow-${c}`).sort(),
    );
    /** An account's rules: cluster-wide, and in `namespace` (every namespace when unset). */
    const rulesOf = (account: string, namespace?: string) => {
      const subjectOf = (b: V1RoleBinding | V1ClusterRoleBinding) =>
        b.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === account);
      const clusterBindings = (
        ofKind(objects, 'ClusterRoleBinding') as unknown as V1ClusterRoleBinding[]
      ).filter(subjectOf);
      const bindings = (ofKind(objects, 'RoleBinding') as unknown as V1RoleBinding[]).filter(
        (b) => subjectOf(b) && (!namespace || b.metadata!.namespace === namespace),
      );
      return {
        cluster: clusterBindings.flatMap(
          (b) => (named(objects, 'ClusterRole', b.roleRef.name) as unknown as V1ClusterRole).rules!,
        ),
        namespaced: bindings.flatMap(
          (b) => (named(objects, b.roleRef.kind, b.roleRef.name) as unknown as V1Role).rules!,
        ),
      };
    };
    const bridge = rulesOf('hostflow-bridge');
    for (const rule of [...bridge.cluster, ...bridge.namespaced])
      expect(rule.verbs.every((v) => ['get', 'list', 'watch'].includes(v))).toBe(true);
    expect(bridge.namespaced.flatMap((r) => r.resources)).toEqual(['configmaps']);

    // The OTP service: its records' Secrets in their own namespace, nothing in the engine's
    // (admin keys, cloud credentials), nothing cluster-wide.
    const otp = rulesOf('hostflow-otp');
    expect(otp.cluster).toEqual([]);
    expect(otp.namespaced).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'delete'] },
    ]);
    const otpEnv = deploymentOf('otp').spec!.template.spec!.containers[0]!.env!;
    const otpNamespace = otpEnv.find((e) => e.name === 'HOSTFLOW_OTP_NAMESPACE')?.value;
    expect(otpNamespace).toBe(DEFAULT_OTP_NAMESPACE);
    expect(ofKind(objects, 'Namespace').map((n) => n.metadata.name)).toContain(otpNamespace);
    const bindingPlaces = (ofKind(objects, 'RoleBinding') as unknown as V1RoleBinding[]).map(
      (b) => `${b.subjects![0]!.name} in ${b.metadata!.namespace}`,
    );
    expect(bindingPlaces.sort()).toEqual([
      `hostflow-bridge in ${ENGINE_NAMESPACE}`,
      `hostflow-otp in ${otpNamespace}`,
      `hostflow-worker in ${DEFAULT_RUNNER_NAMESPACE}`,
      `hostflow-worker in ${ENGINE_NAMESPACE}`,
    ]);
    // In the runners' namespace the worker makes runs and reads their logs; it never reads a
    // Secret back there (a run's bundle is written once, then deleted with its Job).
    const runs = (ofKind(objects, 'Role') as unknown as V1Role[]).find(
      (r) => r.metadata!.namespace === DEFAULT_RUNNER_NAMESPACE,
    )!;
    const runSecrets = runs.rules!.filter((r) => r.resources!.includes('secrets'))[0]!.verbs;
    expect(runSecrets.sort()).toEqual(['create', 'delete', 'patch']);
    expect(
      runs.rules!.flatMap((r) => r.verbs).filter((v) => v === 'list' || v === 'watch'),
    ).toEqual([
      'list', // pods, to find a run's pod by its Job's label
    ]);

    // The worker: Secrets by name only, never listed or watched anywhere (garbage collection
    // reads Temporal's records instead); in the engine namespace, only the host keys it records
    // (ConfigMap hostflow-host-keys: made once, then read and updated by name).
    const worker = rulesOf('hostflow-worker', ENGINE_NAMESPACE);
    expect(worker.namespaced).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['hostflow-host-keys'],
        verbs: ['get', 'update'],
      },
    ]);
    const secretVerbs = worker.cluster
      .filter((r) => r.apiGroups!.includes('') && r.resources!.includes('secrets'))
      .flatMap((r) => r.verbs);
    expect(new Set(secretVerbs)).toEqual(new Set(['get', 'create', 'update', 'patch', 'delete']));

    // Of namespaces, the worker and the bridge read kube-system alone: its uid names the cluster
    // their Temporal namespace serves (runtime/namespace-claim.ts).
    for (const account of ['hostflow-worker', 'hostflow-bridge']) {
      const ofNamespaces = rulesOf(account).cluster.filter((r) =>
        r.resources!.includes('namespaces'),
      );
      expect({ account, ofNamespaces }).toEqual({
        account,
        ofNamespaces: [
          {
            apiGroups: [''],
            resources: ['namespaces'],
            resourceNames: ['kube-system'],
            verbs: ['get'],
          },
        ],
      });
    }
    // Nobody may escalate: no wildcards, no RBAC or impersonation rights.
    for (const rule of [
      ...worker.cluster,
      ...worker.namespaced,
      ...runs.rules!,
      ...bridge.cluster,
    ]) {
      expect(rule.verbs).not.toContain('*');
      expect(rule.resources).not.toContain('*');
      expect(rule.apiGroups).not.toContain('rbac.authorization.k8s.io');
      expect(rule.verbs).not.toContain('impersonate');
      expect(rule.verbs).not.toContain('escalate');
    }
    // The Lock policy lets the worker, and only it, change what it locked itself.
    const policies = ofKind(objects, 'ValidatingAdmissionPolicy');
    for (const policy of policies.filter((p) => p.metadata.name.endsWith('.kotas.tech'))) {
      const spec = policy.spec as { variables: Array<{ name: string; expression: string }> };
      expect(spec.variables.find((v) => v.name === 'engineIdentities')!.expression).toBe(
        `['system:serviceaccount:${ENGINE_NAMESPACE}:hostflow-worker']`,
      );
    }
    // ... and every account of the engine is held to what the engine writes.
    const rights = named(objects, 'ValidatingAdmissionPolicy', ENGINE_RIGHTS_POLICY);
    expect(engineIdentitiesOf(rights as V1ValidatingAdmissionPolicy).sort()).toEqual(
      COMPONENTS.map((c) => `system:serviceaccount:${ENGINE_NAMESPACE}:hostflow-${c}`).sort(),
    );
  });

  it('takes the Temporal connection from a Secret, and sets only settings the processes read', () => {
    const secret = named(
      objects,
      'Secret',
      objects.find((o) => o.kind === 'Secret')!.metadata.name,
    );
    expect(secret.metadata.name).toMatch(/^hostflow-temporal-/); // kustomize's content hash
    const temporal = Object.keys(secret.data as Record<string, string>);
    expect(temporal.sort()).toEqual(['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE']);
    const settings = ofKind(objects, 'ConfigMap')[0]!;
    const known = new Set([...SETTING_NAMES, ...OTP_SETTING_NAMES]);
    for (const name of [...temporal, ...Object.keys(settings.data as Record<string, string>)])
      expect(known.has(name) ? name : `${name} (read by no process)`).toBe(name);
    for (const component of ['worker', 'bridge']) {
      const container = deploymentOf(component).spec!.template.spec!.containers[0]!;
      expect(container.envFrom).toEqual([
        { configMapRef: { name: settings.metadata.name } },
        { secretRef: { name: secret.metadata.name } },
      ]);
    }
    // The image's own defaults too.
    const dockerfile = readFileSync(join(REPO_ROOT, 'deploy/image/Dockerfile'), 'utf8');
    const imageSettings = [...dockerfile.matchAll(/\b((?:HOSTFLOW|TEMPORAL)_[A-Z_]+)=/g)];
    expect(imageSettings.length).toBeGreaterThan(0);
    for (const [, name] of imageSettings)
      expect(known.has(name!) ? name : `${name} (read by no process)`).toBe(name);
    // The worker and the bridge run with the Node flags the local stack and the tests use.
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['/usr/bin/tini', '--', 'node']);
    // …and the environment beyond their settings (ENGINE_ENV).
    for (const kind of ['worker', 'bridge'] as const) {
      const container = deploymentOf(kind).spec!.template.spec!.containers[0]!;
      expect(container.args).toEqual([...ENGINE_NODE_FLAGS[kind], ENGINE_SCRIPTS[kind]]);
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
      expect(env).toEqual(ENGINE_ENV[kind]);
    }
    for (const component of COMPONENTS) {
      const env = deploymentOf(component).spec!.template.spec!.containers[0]!.env ?? [];
      for (const { name } of env) {
        if (name in (ENGINE_ENV[component as keyof typeof ENGINE_ENV] ?? {})) continue;
        expect(known.has(name) ? name : `${name} (read by no process)`).toBe(name);
      }
    }
  });

  it('serves the OTP endpoint through a Service, and admits to each port only what must reach it', () => {
    const service = named(objects, 'Service', 'hostflow-otp') as unknown as V1Service;
    expect(service.spec!.selector).toEqual({ 'app.kubernetes.io/component': 'otp' });
    expect(service.spec!.ports).toEqual([{ name: 'https', port: 8443, targetPort: 'https' }]);
    const settings = ofKind(objects, 'ConfigMap')[0]!.data as Record<string, string>;
    expect(settings.HOSTFLOW_OTP_URL).toBe(
      `https://hostflow-otp.${ENGINE_NAMESPACE}.svc:${service.spec!.ports![0]!.port}`,
    );
    // As written (`from`), not as the client's types name it (`_from`).
    type Policy = V1NetworkPolicy & { spec: { ingress?: Array<{ from?: unknown[] }> } };
    const all = ofKind(objects, 'NetworkPolicy') as unknown as Policy[];
    // The runners' namespace denies everything both ways; each run's own policy (made with its
    // Job: activities/runner/manifests.ts) opens its nodes' port 22 to its pod alone.
    const runners = all.filter((p) => p.metadata!.namespace === DEFAULT_RUNNER_NAMESPACE);
    expect(runners.map((p) => p.spec)).toEqual([
      { podSelector: {}, policyTypes: ['Ingress', 'Egress'] },
    ]);
    // Pod Security restricted, and marked for runners: the engine-rights policy lets the engine
    // write its runner bundles only in a namespace so labelled.
    expect(named(objects, 'Namespace', DEFAULT_RUNNER_NAMESPACE).metadata!.labels).toMatchObject({
      [RUNNER_NAMESPACE_LABEL]: 'true',
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
    const policies = all.filter((p) => p.metadata!.namespace !== DEFAULT_RUNNER_NAMESPACE);
    for (const policy of policies) {
      expect(policy.metadata!.namespace).toBe(ENGINE_NAMESPACE);
      expect(policy.spec!.policyTypes).toEqual(['Ingress']);
      // Every rule names both who and which port: none admits anyone, or to every port.
      for (const rule of policy.spec!.ingress ?? []) {
        expect(rule.from?.length).toBeGreaterThan(0);
        expect(rule.ports?.length).toBeGreaterThan(0);
      }
    }
    // Default deny: a policy that selects every pod of the namespace and admits nothing.
    const denyAll = policies.filter((p) => Object.keys(p.spec!.podSelector!).length === 0);
    expect(denyAll.map((p) => p.spec!.ingress ?? [])).toEqual([[]]);

    // Who may reach each port of each component ('node' = only the kubelet, which NetworkPolicy
    // always admits from a pod's own node).
    const monitoring = { namespaceSelector: { matchLabels: MONITORING_NAMESPACE } };
    const buildPods = {
      namespaceSelector: {},
      podSelector: { matchExpressions: [{ key: 'tekton.dev/taskRun', operator: 'Exists' }] },
    };
    const worker = { podSelector: { matchLabels: { 'app.kubernetes.io/component': 'worker' } } };
    const expected: Record<string, Record<number, unknown[]>> = {
      otp: { 8443: [buildPods, worker], 9464: [monitoring] },
      worker: { 9464: [monitoring], 8081: ['node'] },
      bridge: { 9464: [monitoring], 8081: ['node'] },
    };
    for (const component of COMPONENTS) {
      const container = deploymentOf(component).spec!.template.spec!.containers[0]!;
      const covering = policies.filter((p) => {
        const { matchLabels, matchExpressions } = p.spec!.podSelector!;
        return (
          matchLabels?.['app.kubernetes.io/component'] === component ||
          matchExpressions?.some((e) => e.values?.includes(component))
        );
      });
      expect(covering).toHaveLength(1);
      const admitted: Record<number, unknown[]> = {};
      for (const port of container.ports!) admitted[port.containerPort] = ['node'];
      for (const rule of covering[0]!.spec!.ingress!)
        for (const port of rule.ports!) {
          const number = port.port as number;
          expect(container.ports!.map((p) => p.containerPort)).toContain(number);
          admitted[number] = rule.from!;
        }
      expect({ component, admitted }).toEqual({ component, admitted: expected[component] });
    }
  });
});

/** Every YAML file under `dir`, at any depth. */
function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFilesUnder(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}
