// Installs the Lock policy and its binding (deploy/locks/) with the engine's identity filled
// in, as `npm start`, the tests and the benchmarks need; a cluster install uses the overlay.
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

const POLICY_FILE = join(REPO_ROOT, 'deploy/locks/validating-admission-policy.yaml');

/** The policy and binding as deployed, with `engineIdentities` exempt from their own Locks. */
export function lockPolicy(engineIdentities: string[]): {
  policy: V1ValidatingAdmissionPolicy;
  binding: V1ValidatingAdmissionPolicyBinding;
} {
  const [policy, binding] = loadAllYaml(readFileSync(POLICY_FILE, 'utf8')) as [
    V1ValidatingAdmissionPolicy,
    V1ValidatingAdmissionPolicyBinding,
  ];
  const variable = policy.spec!.variables!.find((v) => v.name === 'engineIdentities')!;
  variable.expression = JSON.stringify(engineIdentities);
  return { policy, binding };
}

export async function installLockPolicy(kc: KubeConfig, engineIdentities: string[]): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const { policy, binding } = lockPolicy(engineIdentities);
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
