// What the bridge tells each BPA workflow it saw: pure derivations from the objects it watches.
import {
  CLUSTER_LABEL,
  CLUSTER_TYPE_LABEL,
  IP_SOURCE_ANNOTATION,
  RETRY_ANNOTATION,
  type ProvisioningSpec,
  type SoftwareSpec,
} from '../shared/bpa-api.js';
import type { ProvisioningObservation } from '../shared/contracts/provisioning.js';
import type { ClusterView, SoftwareObservation } from '../shared/contracts/software.js';
import type { NamespacedObject } from './resource-watch.js';

export interface ProvisioningObject extends NamespacedObject {
  spec?: ProvisioningSpec;
  status?: {
    phase?: string;
    nodes?: Array<{ label?: string; roles?: string[]; ip?: string; user?: string }>;
  };
}
export interface SoftwareObject extends NamespacedObject {
  spec?: SoftwareSpec;
  status?: { phase?: string };
}

/** The labels, annotations and lifecycle every BPA observation carries. */
function common(item: NamespacedObject, gone: boolean) {
  const { uid, generation = 1, labels, annotations, deletionTimestamp } = item.metadata;
  return {
    uid,
    generation,
    ...(labels?.[CLUSTER_LABEL] ? { cluster: labels[CLUSTER_LABEL] } : {}),
    deleting: gone || deletionTimestamp !== undefined,
    ...(annotations?.[RETRY_ANNOTATION] ? { retry: annotations[RETRY_ANNOTATION] } : {}),
  };
}

export function provisioningObservation(
  item: ProvisioningObject,
  gone: boolean,
): ProvisioningObservation {
  const { uid, generation, cluster, deleting, retry } = common(item, gone);
  // Only when set, so that what a Provisioning without it is sent stays as it was.
  const clusterType = item.metadata.labels?.[CLUSTER_TYPE_LABEL];
  return {
    uid,
    generation,
    ...(cluster ? { cluster } : {}),
    ...(clusterType ? { clusterType } : {}),
    spec: item.spec ?? {},
    ipSource: item.metadata.annotations?.[IP_SOURCE_ANNOTATION] === 'dhcp' ? 'dhcp' : 'nic',
    deleting,
    ...(retry ? { retry } : {}),
  };
}

export function softwareObservation(
  item: SoftwareObject,
  gone: boolean,
  cluster: ClusterView | undefined,
): SoftwareObservation {
  return {
    ...common(item, gone),
    spec: item.spec ?? {},
    ...(cluster ? { clusterView: cluster } : {}),
  };
}

/** A Provisioning's cluster as its status shows it; one being deleted is `Deleting`. */
export function clusterView(item: ProvisioningObject): ClusterView {
  const nodes = (item.status?.nodes ?? []).flatMap((n) =>
    n.label && n.ip
      ? [{ label: n.label, roles: n.roles ?? [], ip: n.ip, user: n.user ?? 'root' }]
      : [],
  );
  return {
    provisioning: item.metadata.name,
    phase: item.metadata.deletionTimestamp ? 'Deleting' : (item.status?.phase ?? ''),
    nodes,
  };
}
