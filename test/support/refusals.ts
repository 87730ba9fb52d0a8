// Kubernetes refusing a write, for real: a ValidatingAdmissionPolicy in the test API server that
// denies some requests with the status code a real cluster would answer (422 Invalid for a
// policy, 403 Forbidden for one that models missing permissions). No mock involved.
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '../../local-stack/process.js';
import { statusCode } from '../../shared/kube-errors.js';
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
 * returns a function that lifts it and waits until `probe` is no longer refused.
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
  const refused = async (): Promise<boolean> => {
    try {
      await probe();
      return false;
    } catch (err) {
      return (err as { code?: number }).code === (refusal.reason === 'Invalid' ? 422 : 403);
    }
  };
  // The API server applies a policy's removal as lazily as its creation: the next test must not
  // meet a refusal this one lifted.
  const lift = async () => {
    await api.deleteValidatingAdmissionPolicyBinding({ name }).catch(() => undefined);
    await api.deleteValidatingAdmissionPolicy({ name }).catch(() => undefined);
    await waitFor(
      `admission policy ${name} to be lifted`,
      async () => ((await refused()) ? undefined : true),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  };
  try {
    await waitFor(
      `admission policy ${name} to apply`,
      async () => ((await refused()) ? true : undefined),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  } catch (err) {
    await lift();
    throw err;
  }
  return lift;
}

/** How the API server answered a request: `allowed`, or `<code>: <body>` when it refused it. */
export async function answer(request: Promise<unknown>): Promise<string> {
  try {
    await request;
    return 'allowed';
  } catch (err) {
    return `${statusCode(err)}: ${(err as { body?: string }).body ?? (err as Error).message}`;
  }
}
