// A tenant who may delete Secrets in the engine namespace, asking with --dry-run=server: the
// API server answers as it would for the real call (Locks included), and nothing is deleted.
import { CoreV1Api } from '@kubernetes/client-node';
import { apiAnswer } from './api-answer.js';
import type { TestScope } from './scope.js';
import { tenantIdentity } from './service-account.js';

/** Returns what the API server answers to deleting each Secret: 'allowed' or the refusal. */
export async function secretDeleter(scope: TestScope): Promise<(name: string) => Promise<string>> {
  const tenant = await tenantIdentity(scope.kube.kc, scope.engineNamespace, [
    { apiGroups: [''], resources: ['secrets'], verbs: ['delete'] },
  ]);
  const core = tenant.makeApiClient(CoreV1Api);
  return (name) =>
    apiAnswer(
      core.deleteNamespacedSecret({ name, namespace: scope.engineNamespace, dryRun: 'All' }),
    );
}

/** The refusal a Lock the engine holds gives, up to the reason. */
export const lockedByEngine = (scope: TestScope, secret: string, holder: string): RegExp =>
  new RegExp(
    `^403: .*secrets ${scope.engineNamespace}/${secret} is locked by Lock ` +
      `${scope.engineNamespace}/${secret} \\(reason: .*\\); held by hostflow workflow ` +
      `${holder.replace(/[/.]/g, '\\$&')}, which releases it once its work on it is done\\. To unlock: ` +
      `kubectl -n ${scope.engineNamespace} delete lock ${secret}$`,
  );
