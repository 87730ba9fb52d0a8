// Ingests ClusterOperations through the one ingest (ingest.ts): each is told to the workflow of
// the Provisioning it names, in its own namespace, which queues it and runs it as its child. An
// ended one is told again only when on-call asks a Failed one to retry. A Provisioning whose
// workflow does not run cannot take it; the periodic relist tells it again.
import { RETRY_ANNOTATION } from '../shared/bpa-api.js';
import {
  CLUSTER_OPERATION_API,
  type ClusterOperationSpec,
} from '../shared/cluster-operation-api.js';
import { MAX_SPEC_BYTES, specSize } from '../shared/cluster-operation-limits.js';
import {
  clusterOperationObserved,
  type ClusterOperationObservation,
} from '../shared/contracts/cluster-operation.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import type { Registry } from 'prom-client';
import { ClusterOperationCounts } from './cluster-operation-counts.js';
import { Ingest, type IngestOptions } from './ingest.js';
import { createClusterOperationsGauge } from './metrics.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';

export interface ClusterOperationObject extends NamespacedObject {
  metadata: NamespacedObject['metadata'] & { creationTimestamp?: string | Date };
  spec?: ClusterOperationSpec;
  status?: { phase?: string; retry?: string; failedStep?: string };
}

const ENDED = ['Succeeded', 'Failed', 'Cancelled'];

export function clusterOperationObservation(
  item: ClusterOperationObject,
  gone: boolean,
): ClusterOperationObservation {
  const { name, uid, creationTimestamp, deletionTimestamp, annotations } = item.metadata;
  const phase = item.status?.phase;
  const retry = annotations?.[RETRY_ANNOTATION];
  const { retry: retried, failedStep } = item.status ?? {};
  const spec = item.spec ?? {};
  // Too large to take: not sent into history whole, only what names its Provisioning (which an
  // older worker refuses too, as a spec without an action).
  const specBytes = specSize(spec);
  const sent =
    specBytes > MAX_SPEC_BYTES
      ? { spec: { provisioning: spec.provisioning }, specBytes }
      : { spec };
  return {
    name,
    uid,
    createdAt: creationTimestamp ? new Date(creationTimestamp).toISOString() : '',
    ...sent,
    ...(phase && ENDED.includes(phase) ? { ended: phase } : {}),
    deleting: gone || deletionTimestamp !== undefined,
    ...(retry ? { retry } : {}),
    ...(retried ? { retried } : {}),
    ...(failedStep ? { failedStep } : {}),
  };
}

/** A Failed operation that on-call asked to run again, with a retry value not yet taken. */
const retryAsked = (item: ClusterOperationObject) => {
  const retry = item.metadata.annotations?.[RETRY_ANNOTATION];
  return item.status?.phase === 'Failed' && !!retry && retry !== item.status.retry;
};

export function clusterOperationIngest(options: IngestOptions & { metrics?: Registry }): Ingest {
  const ingest = new Ingest(options);
  const counts = new ClusterOperationCounts();
  if (options.metrics) createClusterOperationsGauge(options.metrics, () => counts.counts());
  const seen = async (item: ClusterOperationObject, gone: boolean, relisted: boolean) => {
    const { namespace, name, uid } = item.metadata;
    // Counted before anything is sent: an ended one is counted too, though not told again.
    counts.observe(uid, gone, item.status?.phase, item.spec);
    const provisioning = item.spec?.provisioning;
    // The CRD requires it; an operation that has ended has nothing left to run or cancel.
    if (!provisioning) return;
    if (ENDED.includes(item.status?.phase ?? '') && !(retryAsked(item) && !gone)) return;
    const subject = `ClusterOperation ${namespace}/${name}`;
    const target = {
      workflowId: WORKFLOW_ID.provisioning(namespace, provisioning),
      key: `cluster-operation/${uid}`,
      subject,
    };
    const message = () => ({
      signal: clusterOperationObserved,
      arg: clusterOperationObservation(item, gone),
    });
    const outcome = await ingest.send(target, message, { anyway: relisted, forget: gone });
    if (outcome === 'not-running' && !gone) {
      ingest.log(
        `${subject}: Provisioning ${namespace}/${provisioning} has no running workflow; ` +
          'told again at the next relist',
        'warn',
      );
    }
  };
  ingest.watch(
    resourceWatch<ClusterOperationObject>(
      'ClusterOperation',
      CLUSTER_OPERATION_API,
      ingest.watchOptions,
      seen,
    ),
  );
  return ingest;
}
