// A worker identity with only the permissions RBAC grants it, against the real API server: a
// ServiceAccount, a token from the TokenRequest API, and a kubeconfig for it. Tests revoke part
// of its permissions to see what the engine does with a 403.
import {
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
} from '@kubernetes/client-node';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testEnv, uniqueSuffix } from './env.js';

export interface WorkerIdentity {
  kubeconfigPath: string;
  /** Takes away reading ConfigMaps in the engine namespace (host-config). */
  revokeConfigMaps(): Promise<void>;
  restoreConfigMaps(): Promise<void>;
  dispose(): Promise<void>;
}

/** What the worker does in the cluster, cluster-wide (TaskRuns live in any namespace). */
const WORKER_RULES: V1PolicyRule[] = [
  // By name only, as deploy/base grants it: the worker never lists Secrets.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update', 'delete'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  // Which cluster it serves, read as it starts (runtime/namespace-claim.ts), as deploy/base grants.
  { apiGroups: [''], resources: ['namespaces'], resourceNames: ['kube-system'], verbs: ['get'] },
  { apiGroups: ['tekton.dev'], resources: ['taskruns'], verbs: ['get', 'list', 'patch'] },
  {
    apiGroups: ['kotas.tech'],
    resources: ['locks'],
    verbs: ['get', 'list', 'create', 'update', 'delete'],
  },
];

export async function createWorkerIdentity(
  kc: KubeConfig,
  engineNamespace: string,
): Promise<WorkerIdentity> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const name = `hostflow-worker-${uniqueSuffix()}`;
  const subject = { kind: 'ServiceAccount', name, namespace: engineNamespace };
  await core.createNamespacedServiceAccount({
    namespace: engineNamespace,
    body: { metadata: { name } },
  });
  await rbac.createClusterRole({ body: { metadata: { name }, rules: WORKER_RULES } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [subject],
    },
  });
  await rbac.createNamespacedRole({
    namespace: engineNamespace,
    body: {
      metadata: { name },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    },
  });
  const bindConfigMaps = () =>
    rbac.createNamespacedRoleBinding({
      namespace: engineNamespace,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [subject],
      },
    });
  await bindConfigMaps();
  const kubeconfigPath = await serviceAccountKubeconfig(kc, engineNamespace, name);
  return {
    kubeconfigPath,
    revokeConfigMaps: async () => {
      await rbac.deleteNamespacedRoleBinding({ name, namespace: engineNamespace });
    },
    restoreConfigMaps: async () => {
      await bindConfigMaps();
    },
    dispose: async () => {
      await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
      await rbac.deleteClusterRole({ name }).catch(() => undefined);
    },
  };
}

/** A token for the ServiceAccount (TokenRequest API) and a kubeconfig file that uses it. */
export async function serviceAccountKubeconfig(
  kc: KubeConfig,
  namespace: string,
  name: string,
): Promise<string> {
  const token = await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const cluster = kc.getCurrentCluster()!;
  const user = `${namespace}-${name}`;
  const restricted = new KubeConfig();
  restricted.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token: token.status!.token }],
    contexts: [{ name: user, cluster: cluster.name, user }],
    currentContext: user,
  });
  const kubeconfigPath = join(testEnv('stateDir'), `${user}.kubeconfig`);
  writeFileSync(kubeconfigPath, restricted.exportConfig(), { mode: 0o600 });
  return kubeconfigPath;
}

/**
 * A ServiceAccount of a tenant with these rights in one namespace, and a kubeconfig for it. A
 * Role of its own: the built-in admin and edit roles are aggregated by the controller manager,
 * which this API server runs without.
 */
export async function tenantIdentity(
  kc: KubeConfig,
  namespace: string,
  rules: V1PolicyRule[],
  /** Rights on cluster-scoped objects (Nodes), through a ClusterRole of its own. */
  clusterRules: V1PolicyRule[] = [],
): Promise<KubeConfig> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const name = `tenant-${uniqueSuffix()}`;
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
  if (clusterRules.length) {
    await rbac.createClusterRole({ body: { metadata: { name }, rules: clusterRules } });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      },
    });
  }
  const token = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const tenant = new KubeConfig();
  tenant.loadFromOptions({
    clusters: [kc.getCurrentCluster()!],
    users: [{ name, token: token.status!.token }],
    contexts: [{ name, cluster: kc.getCurrentCluster()!.name, user: name }],
    currentContext: name,
  });
  return tenant;
}
