// Ingests ClusterOperations through the one ingest (ingest.ts): each is told to the workflow of
// the Provisioning it names, in its own namespace, which queues it and runs it as its child. A
// Provisioning whose workflow does not run cannot take it; the periodic relist tells it again.
import {
  CLUSTER_OPERATION_API,
  type ClusterOperationSpec,
} from '../shared/cluster-operation-api.js';
import {
  clusterOperationObserved,
  type ClusterOperationObservation,
} from '../shared/contracts/cluster-operation.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { Ingest, type IngestOptions } from './ingest.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';

export interface ClusterOperationObject extends NamespacedObject {
  metadata: NamespacedObject['metadata'] & { creationTimestamp?: string | Date };
  spec?: ClusterOperationSpec;
  status?: { phase?: string };
}

const ENDED = ['Succeeded', 'Failed', 'Cancelled'];

export function clusterOperationObservation(
  item: ClusterOperationObject,
  gone: boolean,
): ClusterOperationObservation {
  const { name, uid, creationTimestamp, deletionTimestamp } = item.metadata;
  const phase = item.status?.phase;
  return {
    name,
    uid,
    createdAt: creationTimestamp ? new Date(creationTimestamp).toISOString() : '',
    spec: item.spec ?? {},
    ...(phase && ENDED.includes(phase) ? { ended: phase } : {}),
    deleting: gone || deletionTimestamp !== undefined,
  };
}

export function clusterOperationIngest(options: IngestOptions): Ingest {
  const ingest = new Ingest(options);
  const seen = async (item: ClusterOperationObject, gone: boolean, relisted: boolean) => {
    const { namespace, name, uid } = item.metadata;
    const provisioning = item.spec?.provisioning;
    // The CRD requires it; an operation that has ended has nothing left to run or cancel.
    if (!provisioning || ENDED.includes(item.status?.phase ?? '')) return;
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
