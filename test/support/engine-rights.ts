// A test file's engine accounts held to the engine-rights policy
// (deploy/engine-rights/engine-rights-policy.yaml) on the shared API server, beside the accounts
// other files hold, as the kustomize base holds the manifests' accounts in a real install.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { holdToEngineRights } from '../../local-stack/engine-rights.js';
import { waitFor } from '../../local-stack/process.js';
import { apiAnswer } from './api-answer.js';

/** What the policy says to a service-account token Secret: how a probe knows it is held. */
const TOKEN_REFUSED = /^403: .*of type kubernetes\.io\/service-account-token/;

/**
 * Holds `identities` (usernames) to the engine's rights, and resolves once admission holds
 * `probe`, one of them that may create Secrets in `namespace` (a dry run as it, refused). The
 * returned function lets them go.
 */
export async function holdEngineAccounts(
  admin: KubeConfig,
  identities: string[],
  probe: { kc: KubeConfig; namespace: string },
): Promise<() => Promise<void>> {
  for (const identity of identities) await holdToEngineRights(admin, identity);
  const core = probe.kc.makeApiClient(CoreV1Api);
  const tryToken = () =>
    apiAnswer(
      core.createNamespacedSecret({
        namespace: probe.namespace,
        dryRun: 'All',
        body: {
          metadata: {
            name: 'engine-rights-probe',
            annotations: { 'kubernetes.io/service-account.name': 'default' },
          },
          type: 'kubernetes.io/service-account-token',
        },
      }),
    );
  // A policy changed a moment ago reaches the API server's admission a little later.
  await waitFor(
    'admission to hold the engine to its rights',
    async () => (TOKEN_REFUSED.test(await tryToken()) ? true : undefined),
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  return async () => {
    for (const identity of identities) await holdToEngineRights(admin, identity, false);
  };
}
