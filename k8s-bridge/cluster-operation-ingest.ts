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
  status?: { phase?: string; retry?: string };
}

const ENDED = ['Succeeded', 'Failed', 'Cancelled'];

/** What its workflow starts with: the object as it appeared, or as on-call asked it to retry. */
export function clusterOperationRequest(item: ClusterOperationObject): ClusterOperationRequest {
  const { namespace, name, uid, creationTimestamp, annotations } = item.metadata;
  const retry = annotations?.[RETRY_ANNOTATION];
  const spec = item.spec ?? {};
  // Too large to take: not sent into history whole, only what names its Provisioning.
  const specBytes = specSize(spec);
  const sent =
    specBytes > MAX_SPEC_BYTES
      ? { spec: { provisioning: spec.provisioning }, specBytes }
      : { spec };
  return {
    namespace,
    name,
    uid,
    createdAt: creationTimestamp ? new Date(creationTimestamp).toISOString() : '',
    ...sent,
    ...(item.status?.phase === 'Failed' && retry ? { retry } : {}),
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
      const deleting = gone || item.metadata.deletionTimestamp !== undefined;
      const request = clusterOperationRequest(item);
      // A deleted one's workflow is only told: it leaves the line, or its playbook stops.
      const start = deleting ? undefined : clusterOperationLifecycleStart(request);
      const { retry } = request;
      const arg = { uid, deleting, ...(retry ? { retry } : {}) };
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
