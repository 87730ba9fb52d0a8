// Installs the Lock policies and their bindings (deploy/locks/: namespaced objects, and Nodes
// through Locks in the namespace cluster-locks) with the engine's identity filled in, as
// `npm start`, the tests and the benchmarks need; a cluster install uses the overlay.
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  loadAllYaml,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';
import { upsert } from './upsert.js';
import { CLUSTER_LOCKS_NAMESPACE, LOCKABLE_LABEL } from '../shared/lock-api.js';
import { statusCode } from '../shared/kube-errors.js';

const POLICY_FILES = [
  'validating-admission-policy.yaml',
  'cluster-scoped-policy.yaml',
  'lock-marks-policy.yaml',
].map((f) => join(REPO_ROOT, 'deploy/locks', f));

/** A policy and binding as deployed, with `engineIdentities` exempt from their own Locks. */
function lockPolicy(
  file: string,
  engineIdentities: string[],
): {
  policy: V1ValidatingAdmissionPolicy;
  binding: V1ValidatingAdmissionPolicyBinding;
} {
  const [policy, binding] = loadAllYaml(readFileSync(file, 'utf8')) as [
    V1ValidatingAdmissionPolicy,
    V1ValidatingAdmissionPolicyBinding,
  ];
  const variable = policy.spec!.variables!.find((v) => v.name === 'engineIdentities')!;
  variable.expression = JSON.stringify(engineIdentities);
  return { policy, binding };
}

export async function installLockPolicy(kc: KubeConfig, engineIdentities: string[]): Promise<void> {
  // Opted in, as every namespace whose Locks apply: the Node Locks' status says Enforced.
  const lockable = { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value };
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: CLUSTER_LOCKS_NAMESPACE, labels: lockable } } })
    .catch(async (err: unknown) => {
      if (statusCode(err) !== 409) throw err; // 409: it is there already (opted in, or not yet)
      await kc
        .makeApiClient(CoreV1Api)
        .patchNamespace(
          { name: CLUSTER_LOCKS_NAMESPACE, body: { metadata: { labels: lockable } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
    });
  for (const file of POLICY_FILES) {
    const { policy, binding } = lockPolicy(file, engineIdentities);
    await upsert(
      (name) => api.readValidatingAdmissionPolicy({ name }),
      (body) => api.createValidatingAdmissionPolicy({ body }),
      (name, body) => api.replaceValidatingAdmissionPolicy({ name, body }),
      policy,
    );
    await upsert(
      (name) => api.readValidatingAdmissionPolicyBinding({ name }),
      (body) => api.createValidatingAdmissionPolicyBinding({ body }),
      (name, body) => api.replaceValidatingAdmissionPolicyBinding({ name, body }),
      binding,
    );
  }
}
