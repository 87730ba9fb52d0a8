// Installs the policy that holds the engine's identities to what the engine itself writes
// (deploy/engine-rights/engine-rights-policy.yaml), with those identities filled in, as `npm start`
// and the tests need; a cluster install uses the kustomize base, which names the manifests'
// ServiceAccounts.
import {
  AdmissionregistrationV1Api,
  type KubeConfig,
  type V1ValidatingAdmissionPolicy,
} from '@kubernetes/client-node';
import { join } from 'node:path';
import { statusCode } from '../shared/kube-errors.js';
import { REPO_ROOT } from './paths.js';
import {
  readAdmissionPolicy,
  upsertAdmissionPolicy,
  type AdmissionPolicy,
} from './admission-policy.js';

export const ENGINE_RIGHTS_POLICY = 'engine-rights.hostflow.dev';
const POLICY_FILE = join(REPO_ROOT, 'deploy/engine-rights/engine-rights-policy.yaml');
/** The match condition that names the engine's identities (exact usernames). */
const ENGINE_MATCH = 'engine-identities';

const matchExpression = (identities: string[]) =>
  `request.userInfo.username in ${JSON.stringify(identities)}`;

/** The identities a policy as installed holds (the shipped file's quotes included). */
export function engineIdentitiesOf(policy: V1ValidatingAdmissionPolicy): string[] {
  const expression =
    policy.spec?.matchConditions?.find((c) => c.name === ENGINE_MATCH)?.expression ?? '';
  const list = /\bin\s*\[(.*)\]\s*$/s.exec(expression)?.[1] ?? '';
  return [...list.matchAll(/'([^']*)'|"([^"]*)"/g)].map((m) => m[1] ?? m[2]!);
}

/** The policy and binding as shipped, holding `engineIdentities`. */
export function engineRightsPolicy(engineIdentities: string[]): AdmissionPolicy {
  const { policy, binding } = readAdmissionPolicy(POLICY_FILE);
  const condition = policy.spec!.matchConditions!.find((c) => c.name === ENGINE_MATCH)!;
  condition.expression = matchExpression(engineIdentities);
  return { policy, binding };
}

/** Installs the policy and its binding, holding exactly `engineIdentities` (none: nobody). */
export async function installEngineRightsPolicy(
  kc: KubeConfig,
  engineIdentities: string[],
): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  await upsertAdmissionPolicy(api, engineRightsPolicy(engineIdentities));
}

/**
 * Adds `identity` to the identities the installed policy holds, or (`held` false) takes it out,
 * leaving the others: test files sharing one API server each hold their own engine's accounts.
 * Written with the resourceVersion read, so a concurrent change is read again, never lost.
 */
export async function holdToEngineRights(
  kc: KubeConfig,
  identity: string,
  held = true,
): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  for (;;) {
    const current = await api.readValidatingAdmissionPolicy({ name: ENGINE_RIGHTS_POLICY });
    const others = engineIdentitiesOf(current).filter((id) => id !== identity);
    const wanted = held ? [...others, identity] : others;
    const condition = current.spec!.matchConditions!.find((c) => c.name === ENGINE_MATCH)!;
    if (condition.expression === matchExpression(wanted)) return;
    condition.expression = matchExpression(wanted);
    try {
      await api.replaceValidatingAdmissionPolicy({ name: ENGINE_RIGHTS_POLICY, body: current });
      return;
    } catch (err) {
      if (statusCode(err) !== 409) throw err;
    }
  }
}
