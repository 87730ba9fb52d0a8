// Installs the Lock policies and their bindings (deploy/locks/: namespaced objects, and Nodes
// through Locks in the namespace cluster-locks, which cluster-setup.ts opts in) with the engine's
// identity filled in, as `npm start`, the tests and the benchmarks need; a cluster install uses
// the overlay.
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';
import {
  readAdmissionPolicy,
  upsertAdmissionPolicy,
  type AdmissionPolicy,
} from './admission-policy.js';

const POLICY_FILES = [
  'validating-admission-policy.yaml',
  'cluster-scoped-policy.yaml',
  'lock-marks-policy.yaml',
].map((f) => join(REPO_ROOT, 'deploy/locks', f));

/** A policy and binding as deployed, with `engineIdentities` exempt from their own Locks. */
function lockPolicy(file: string, engineIdentities: string[]): AdmissionPolicy {
  const { policy, binding } = readAdmissionPolicy(file);
  const variable = policy.spec!.variables!.find((v) => v.name === 'engineIdentities')!;
  variable.expression = JSON.stringify(engineIdentities);
  return { policy, binding };
}

/** The policies and bindings of deploy/locks, with `engineIdentities` exempt from their own Locks. */
export async function installLockPolicy(kc: KubeConfig, engineIdentities: string[]): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  for (const file of POLICY_FILES) {
    await upsertAdmissionPolicy(api, lockPolicy(file, engineIdentities));
  }
}
