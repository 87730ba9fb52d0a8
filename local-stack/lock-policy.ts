// Installs the Lock policies and their bindings (deploy/locks/: namespaced objects, and Nodes
// through Locks in the namespace cluster-locks, which cluster-setup.ts opts in) with the engine's
// identity filled in, as `npm start`, the tests and the benchmarks need; a cluster install uses
// the overlay.
import {
  AdmissionregistrationV1Api,
  loadAllYaml,
  type KubeConfig,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';
import { upsert } from './upsert.js';

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

/** The policies and bindings of deploy/locks, with `engineIdentities` exempt from their own Locks. */
export async function installLockPolicy(kc: KubeConfig, engineIdentities: string[]): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
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
