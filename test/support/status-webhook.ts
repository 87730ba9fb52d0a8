// A validating webhook over the status writes of some ClusterOperations, as a broken one in a real
// cluster: `unreachable` (nothing listens; failurePolicy Fail) fails each write with a 500, which
// the engine retries; `silent` (a server that accepts and never answers; failurePolicy Ignore)
// has each write wait out the webhook's timeout, then admits it. No mock: the API server calls it.
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { createServer, type Socket } from 'node:net';
import { freePort } from '../../local-stack/ports.js';
import { waitFor } from '../../local-stack/process.js';
import { CLUSTER_OPERATION_API } from '../../shared/cluster-operation-api.js';
import { statusCode } from '../../shared/kube-errors.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';
import type { TestScope } from './scope.js';

const SILENT_TIMEOUT_SECONDS = 3;

export interface StatusWebhook {
  mode: 'unreachable' | 'silent';
  /** The operations whose writes it intercepts, `probe` among them (an operation that exists). */
  names: string[];
  probe: string;
  /** A CEL condition over `object` a write must also meet (`true`: every write). */
  when: string;
}

/** Installs the webhook and waits until the API server calls it; returns what lifts it. */
export async function interceptStatusWrites(
  scope: TestScope,
  hook: StatusWebhook,
): Promise<() => Promise<void>> {
  const admission = scope.kube.kc.makeApiClient(AdmissionregistrationV1Api);
  const name = `status-webhook-${hook.probe}-${scope.namespace}`.slice(0, 63);
  const sockets = new Set<Socket>();
  const port = await freePort();
  // Only `silent` listens: for `unreachable`, nothing is at the port.
  const silent = hook.mode === 'silent' ? createServer((socket) => sockets.add(socket)) : undefined;
  if (silent) await new Promise<void>((ok) => silent.listen(port, '127.0.0.1', ok));
  // A dry-run write to the probe that meets `when`: intercepted or not, by how it is answered.
  const intercepted = async () => {
    const started = Date.now();
    try {
      await scope.kube.custom.patchNamespacedCustomObjectStatus(
        {
          ...CLUSTER_OPERATION_API,
          namespace: scope.namespace,
          name: hook.probe,
          body: { status: { queuePosition: 1 } },
          dryRun: 'All',
        },
        MERGE_PATCH,
      );
      return Date.now() - started >= (SILENT_TIMEOUT_SECONDS - 0.5) * 1000;
    } catch (err) {
      return statusCode(err) === 500;
    }
  };
  await admission.createValidatingWebhookConfiguration({
    body: {
      metadata: { name },
      webhooks: [
        {
          name: 'status-writes.hostflow.test',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: hook.mode === 'silent' ? 'Ignore' : 'Fail',
          timeoutSeconds: hook.mode === 'silent' ? SILENT_TIMEOUT_SECONDS : 1,
          clientConfig: { url: `https://127.0.0.1:${port}/validate` },
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': scope.namespace } },
          matchConditions: [
            {
              name: 'intercepted',
              expression:
                `object.metadata.name in ${JSON.stringify(hook.names)} && ` +
                `has(object.status) && (${hook.when})`,
            },
          ],
          rules: [
            {
              apiGroups: [CLUSTER_OPERATION_API.group],
              apiVersions: ['*'],
              operations: ['UPDATE'],
              resources: ['clusteroperations/status'],
            },
          ],
        },
      ],
    },
  });
  await waitFor('the webhook to intercept status writes', async () =>
    (await intercepted()) ? true : undefined,
  );
  return async () => {
    await admission.deleteValidatingWebhookConfiguration({ name });
    await waitFor('the webhook to be gone', async () => ((await intercepted()) ? undefined : true));
    for (const socket of sockets) socket.destroy();
    if (silent) await new Promise((done) => silent.close(done));
  };
}
