// The ValidatingAdmissionPolicies the local stack installs from deploy/locks/: each file holds a
// policy and its binding, read as shipped, filled in by the caller, and installed with `upsert`.
import {
  loadAllYaml,
  type AdmissionregistrationV1Api,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { upsert } from './upsert.js';

export interface AdmissionPolicy {
  policy: V1ValidatingAdmissionPolicy;
  binding: V1ValidatingAdmissionPolicyBinding;
}

/** The policy and binding of `file`, in that order. */
export function readAdmissionPolicy(file: string): AdmissionPolicy {
  const [policy, binding] = loadAllYaml(readFileSync(file, 'utf8')) as [
    V1ValidatingAdmissionPolicy,
    V1ValidatingAdmissionPolicyBinding,
  ];
  return { policy, binding };
}

/** Creates or replaces the policy, then its binding. */
export async function upsertAdmissionPolicy(
  api: AdmissionregistrationV1Api,
  { policy, binding }: AdmissionPolicy,
): Promise<void> {
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
