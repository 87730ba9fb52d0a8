// Ingests ClusterOperations through the one ingest (ingest.ts): each has its own workflow from
// the moment it appears (`cluster-operation/<ns>/<name>`, started with what the object says),
// which asks the Provisioning it names for a turn. A deleted one's workflow is told, to leave the
// line or stop its playbook. An ended one is started again only when on-call asks a Failed one to
// retry (a new value of the annotation): the new run resumes where the Provisioning's workflow
// saw it stop. What the engine wrote in the status is never sent back to a workflow.
import { RETRY_ANNOTATION } from '../shared/bpa-api.js';
import {
  CLUSTER_OPERATION_API,
  type ClusterOperationSpec,
} from '../shared/cluster-operation-api.js';
import { MAX_SPEC_BYTES, specSize } from '../shared/cluster-operation-limits.js';
import {
  type ClusterOperationObservation,
  clusterOperationLifecycleStart,
  clusterOperationSeen,
  type ClusterOperationRequest,
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
  };
}

/** What its workflow starts with: the object as it appeared, or as on-call asked it to retry. */
export function clusterOperationRequest(
  namespace: string,
  seen: ClusterOperationObservation,
): ClusterOperationRequest {
  const { name, uid, createdAt, spec, specBytes, retry, ended } = seen;
  return {
    namespace,
    name,
    uid,
    createdAt,
    spec,
    ...(specBytes !== undefined ? { specBytes } : {}),
    ...(ended === 'Failed' && retry ? { retry } : {}),
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
    // The CRD requires it; an operation that has ended has nothing left to run or cancel.
    if (!item.spec?.provisioning) return;
    if (ENDED.includes(item.status?.phase ?? '') && !(retryAsked(item) && !gone)) return;
    const target = {
      workflowId: WORKFLOW_ID.clusterOperation(namespace, name),
      key: `cluster-operation/${uid}`,
      subject: `ClusterOperation ${namespace}/${name}`,
    };
    const message = () => {
      const observation = clusterOperationObservation(item, gone);
      const request = clusterOperationRequest(namespace, observation);
      // A deleted one's workflow is only told: it leaves the line, or its playbook stops.
      const start = observation.deleting ? undefined : clusterOperationLifecycleStart(request);
      const { retry } = request;
      const arg = { uid, deleting: observation.deleting, ...(retry ? { retry } : {}) };
      return { signal: clusterOperationSeen, arg, ...(start ? { start } : {}) };
    };
    await ingest.send(target, message, { anyway: relisted, forget: gone });
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
