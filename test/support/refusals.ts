// Kubernetes refusing a write, for real: a ValidatingAdmissionPolicy in the test API server that
// denies some requests with the status code a real cluster would answer (422 Invalid for a
// policy, 403 Forbidden for one that models missing permissions). No mock involved.
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '../../local-stack/process.js';
import { uniqueSuffix } from './env.js';

export interface Refusal {
  /** The request kinds refused. */
  apiGroup: string;
  resource: string;
  operations: Array<'CREATE' | 'UPDATE' | 'DELETE'>;
  /** In this namespace only. */
  namespace: string;
  /** Object names refused; or `picks`, a CEL expression over `object` naming those refused. */
  names?: string[];
  picks?: string;
  reason: 'Invalid' | 'Forbidden';
  message: string;
}

/**
 * Installs the refusal and waits until the API server applies it (`probe` must then fail);
 * returns a function that lifts it.
 */
export async function refuse(
  kc: KubeConfig,
  refusal: Refusal,
  probe: () => Promise<unknown>,
): Promise<() => Promise<void>> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const name = `hostflow-test-refusal-${uniqueSuffix()}`;
  const names = (refusal.names ?? []).map((n) => `'${n}'`).join(', ');
  const picked = refusal.picks ?? `object.metadata.name in [${names}]`;
  await api.createValidatingAdmissionPolicy({
    body: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [refusal.apiGroup],
              apiVersions: ['*'],
              resources: [refusal.resource],
              operations: refusal.operations,
            },
          ],
        },
        validations: [
          {
            expression: `!(${picked})`,
            message: refusal.message,
            reason: refusal.reason,
          },
        ],
      },
    },
  });
  await api.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        matchResources: {
          namespaceSelector: {
            matchLabels: { 'kubernetes.io/metadata.name': refusal.namespace },
          },
        },
      },
    },
  });
  const lift = async () => {
    await api.deleteValidatingAdmissionPolicyBinding({ name }).catch(() => undefined);
    await api.deleteValidatingAdmissionPolicy({ name }).catch(() => undefined);
  };
  try {
    await waitFor(
      `admission policy ${name} to apply`,
      async () => {
        try {
          await probe();
          return undefined;
        } catch (err) {
          return (err as { code?: number }).code === (refusal.reason === 'Invalid' ? 422 : 403)
            ? true
            : undefined;
        }
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  } catch (err) {
    await lift();
    throw err;
  }
  return lift;
}
