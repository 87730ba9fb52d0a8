// `hostflow retry provisioning|software|operation|taskrun <ns>/<name>`: on-call resumes a Failed
// Provisioning or ClusterOperation from the step that failed, or has a Software install again
// where it failed, once the cause is fixed
// (or has a Refused one looked at again). It writes the
// retry annotation, as `kubectl annotate` would, so the request is in the resource's history and
// the bridge delivers it like any change; the workflow keeps both runs in its history. A TaskRun
// is retried through its workflow instead (retry-taskrun.ts), which can refuse at once.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { PROVISIONING_API, RETRY_ANNOTATION, SOFTWARE_API } from '../shared/bpa-api.js';
import { CLUSTER_OPERATION_API } from '../shared/cluster-operation-api.js';
import { statusCode } from '../shared/kube-errors.js';
import { loadKubeConfig } from '../runtime/settings.js';
import { runRetryTaskRun } from './retry-taskrun.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

export const RETRY_USAGE = `
retry options:
  hostflow retry provisioning NAMESPACE/NAME [--kubeconfig PATH] [--context NAME]
      Resumes a Failed Provisioning at the step that failed (fix the cause first), or looks at a
      Refused one again. Same as: kubectl annotate provisioning NAME ${RETRY_ANNOTATION}=<now> --overwrite
  hostflow retry software NAMESPACE/NAME [--kubeconfig PATH] [--context NAME]
      Installs a Failed Software again on the nodes where it failed.
  hostflow retry operation NAMESPACE/NAME [--kubeconfig PATH] [--context NAME]
      Runs a Failed ClusterOperation again from the step that failed (fix the cause first); the
      steps before it are not run again, and its workflow keeps both runs.
  hostflow retry taskrun NAMESPACE/NAME [--kubeconfig PATH] [--context NAME]
      Serves a Failed TaskRun that still runs again (fix the cause first, e.g. a host's admin
      key): its error Secret is deleted and it asks for a host anew. Refused, saying why, for a
      TaskRun that is not failed or has completed. Temporal is reached via TEMPORAL_ADDRESS etc.`;

/** What can be retried: the resource, as messages name it, and its kubectl short name. */
const KINDS = {
  provisioning: { api: PROVISIONING_API, kind: 'Provisioning', short: 'bpa', sample: 'bpa-sample' },
  software: { api: SOFTWARE_API, kind: 'Software', short: 'sw', sample: 'software-sample' },
  operation: {
    api: CLUSTER_OPERATION_API,
    kind: 'ClusterOperation',
    short: 'clusterop',
    sample: 'upgrade',
  },
  taskrun: { api: undefined, kind: 'TaskRun', short: 'tr', sample: 'my-build' },
} as const;
type RetryKind = keyof typeof KINDS;

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export interface RetryOptions {
  kind: string | undefined;
  target: string | undefined;
  kubeconfig?: string;
  context?: string;
}

/** Checks the arguments; a message saying what is wrong, or the resource to retry. */
export function parseRetryTarget(options: RetryOptions): {
  kind: RetryKind;
  namespace: string;
  name: string;
} {
  if (!options.kind || !Object.hasOwn(KINDS, options.kind)) {
    throw new Error(
      `cannot retry ${options.kind ? `"${options.kind}"` : 'nothing'}: the kind to retry is "provisioning", "software", "operation" or "taskrun"`,
    );
  }
  const kind = options.kind as RetryKind;
  const [namespace, name, ...rest] = (options.target ?? '').split('/');
  if (!namespace || !name || rest.length || !NAME.test(namespace) || !NAME.test(name)) {
    throw new Error(
      `"${options.target ?? ''}" is not NAMESPACE/NAME of a ${KINDS[kind].kind} (e.g. demo/${KINDS[kind].sample})`,
    );
  }
  return { kind, namespace, name };
}

export async function runRetry(options: RetryOptions): Promise<number> {
  const { kind, namespace, name } = parseRetryTarget(options);
  if (kind === 'taskrun') return runRetryTaskRun({ ...options, namespace, name });
  const { api, kind: what, short } = KINDS[kind];
  const kc = loadKubeConfig(options.kubeconfig, options.context, {
    context: '--context',
    file: '--kubeconfig or KUBECONFIG',
  });
  const custom = kc.makeApiClient(CustomObjectsApi);
  const requested = new Date().toISOString();
  try {
    await custom.patchNamespacedCustomObject(
      {
        ...api,
        namespace,
        name,
        body: { metadata: { annotations: { [RETRY_ANNOTATION]: requested } } },
      },
      MERGE_PATCH,
    );
  } catch (err) {
    const code = statusCode(err);
    const why =
      code === 404
        ? `there is no ${what} ${namespace}/${name}`
        : code === 403
          ? `you may not patch ${api.plural} in ${namespace} (${(err as Error).message})`
          : (err as Error).message;
    console.error(`hostflow retry: ${why}`);
    return 1;
  }
  console.log(
    `hostflow retry: asked ${what} ${namespace}/${name} to retry (${RETRY_ANNOTATION}=${requested}); watch it with kubectl get ${short} -n ${namespace} -w`,
  );
  return 0;
}
