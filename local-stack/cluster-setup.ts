// What a fresh local cluster needs before hostflow can serve it: the CRDs of deploy/families
// (hostflow's own) and the stand-ins of Tekton's, Cluster API's, the MCO's and metal3's
// (upstream-crds/), the Lock policy, the policy that holds the engine to its own rights, and the
// engine namespace. Idempotent, so it also runs against a resumed cluster.
import {
  ApiextensionsV1Api,
  AuthenticationV1Api,
  CoreV1Api,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLUSTER_LOCKS_NAMESPACE, LOCKABLE_LABEL } from '../locks/api.js';
import { installEngineRightsPolicy } from './engine-rights.js';
import { installLockPolicy } from './lock-policy.js';
import { REPO_ROOT } from './paths.js';
import { waitFor } from './process.js';
import { upsert } from './upsert.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

/** Each family's folder (deploy/families), then the stand-ins of the other projects' CRDs. */
const CRD_DIRS = [
  ...readdirSync(join(REPO_ROOT, 'deploy/families')).map((family) => `deploy/families/${family}`),
  'local-stack/upstream-crds',
].map((dir) => join(REPO_ROOT, dir));

/**
 * Installs every CRD and the Lock policy, which exempts `engineIdentity` (the user the local
 * engine runs as) from the Locks the engine owns, and the engine-rights policy, which holds
 * `engineIdentity` to what the engine writes.
 */
export async function installClusterResources(
  kc: KubeConfig,
  engineIdentity: string,
): Promise<void> {
  for (const dir of CRD_DIRS) {
    for (const file of readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .sort()) {
      const path = join(dir, file);
      if (/^kind: CustomResourceDefinition$/m.test(readFileSync(path, 'utf8'))) {
        await installCrd(kc, path);
      }
    }
  }
  // Opted in, as every namespace whose Locks apply: the Node Locks' status says Enforced.
  await ensureNamespace(kc, CLUSTER_LOCKS_NAMESPACE, { engineNamespace: true });
  await installLockPolicy(kc, [engineIdentity]);
  // Unless the engine runs as the admin installing this (the tests' engine, as whom the tests also
  // write tenants' Secrets and Nodes): an admin is never held to the engine's rights.
  const installer = await kc
    .makeApiClient(AuthenticationV1Api)
    .createSelfSubjectReview({ body: {} });
  const admin = installer.status?.userInfo?.username;
  await installEngineRightsPolicy(kc, engineIdentity === admin ? [] : [engineIdentity]);
}

/** Installs the CRD in `file` and waits until the API server serves it. */
export async function installCrd(kc: KubeConfig, file: string): Promise<void> {
  // loadYaml maps wire names (x-kubernetes-preserve-unknown-fields) onto the client's model;
  // a plain YAML parse would have them silently dropped by the serializer.
  await installCrdObject(kc, loadYaml<V1CustomResourceDefinition>(readFileSync(file, 'utf8')));
}

/** Installs the CRD and waits until the API server serves it. */
export async function installCrdObject(
  kc: KubeConfig,
  crd: V1CustomResourceDefinition,
): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const name = crd.metadata!.name!;
  await upsert(
    (n) => api.readCustomResourceDefinition({ name: n }),
    (body) => api.createCustomResourceDefinition({ body }),
    (n, body) => api.replaceCustomResourceDefinition({ name: n, body }),
    crd,
  );
  await waitFor(`CRD ${name} to be established`, async () => {
    const current = await api.readCustomResourceDefinition({ name });
    const established = current.status?.conditions?.some(
      (c) => c.type === 'Established' && c.status === 'True',
    );
    return established ? true : undefined;
  });
}

/**
 * Creates the namespace, or gives an existing one these labels. The engine's namespace opts in
 * to Locks (`engineNamespace`): the engine locks the Secrets there that its work needs.
 */
export async function ensureNamespace(
  kc: KubeConfig,
  name: string,
  { engineNamespace = false }: { engineNamespace?: boolean } = {},
): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const labels: Record<string, string> = engineNamespace
    ? { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value }
    : {};
  try {
    await core.createNamespace({ body: { metadata: { name, labels } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
    if (Object.keys(labels).length === 0) return;
    await core.patchNamespace({ name, body: { metadata: { labels } } }, MERGE_PATCH);
  }
}

const PROBE = 'hostflow-lock-probe';

/**
 * Waits until the API server applies the Lock policy. Right after it starts (or resumes), the
 * policy's params are not resolvable for a moment, and fail closed: every UPDATE and DELETE in
 * a lockable namespace is refused until they are. Probed with a dry-run delete of a ConfigMap.
 */
export async function waitForLockPolicy(kc: KubeConfig, namespace: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: PROBE } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
  await waitFor(
    'the Lock policy to apply',
    async () => {
      await core.deleteNamespacedConfigMap({ name: PROBE, namespace, dryRun: 'All' });
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  await core.deleteNamespacedConfigMap({ name: PROBE, namespace });
}
