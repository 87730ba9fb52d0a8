// What a fresh local cluster needs before hostflow can serve it: the TaskRun CRD and the
// engine namespace. Idempotent, so it also runs against a resumed cluster.
import {
  ApiextensionsV1Api,
  CoreV1Api,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';
import { waitFor } from './process.js';

const TASKRUN_CRD = join(REPO_ROOT, 'deploy/crds/tekton-taskrun.yaml');

export async function installTaskRunCrd(kc: KubeConfig): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  // loadYaml maps wire names (x-kubernetes-preserve-unknown-fields) onto the client's model;
  // a plain YAML parse would have them silently dropped by the serializer.
  const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(TASKRUN_CRD, 'utf8'));
  const name = crd.metadata!.name!;
  try {
    const existing = await api.readCustomResourceDefinition({ name });
    crd.metadata!.resourceVersion = existing.metadata?.resourceVersion;
    await api.replaceCustomResourceDefinition({ name, body: crd });
  } catch (err) {
    if ((err as { code?: number }).code !== 404) throw err;
    await api.createCustomResourceDefinition({ body: crd });
  }
  await waitFor(`CRD ${name} to be established`, async () => {
    const current = await api.readCustomResourceDefinition({ name });
    const established = current.status?.conditions?.some(
      (c) => c.type === 'Established' && c.status === 'True',
    );
    return established ? true : undefined;
  });
}

export async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}
