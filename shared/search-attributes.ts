// Search attributes registered by temporal-dev.yaml; operators filter on them in the UI.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const SA = {
  kind: defineSearchAttributeKey('HostflowKind', SearchAttributeType.KEYWORD),
  namespace: defineSearchAttributeKey('K8sNamespace', SearchAttributeType.KEYWORD),
  name: defineSearchAttributeKey('K8sName', SearchAttributeType.KEYWORD),
  platform: defineSearchAttributeKey('Platform', SearchAttributeType.KEYWORD),
  host: defineSearchAttributeKey('Host', SearchAttributeType.KEYWORD),
  phase: defineSearchAttributeKey('Phase', SearchAttributeType.KEYWORD),
  /** Launch keys of the cloud VMs a workflow owns, set before launching: GC spares those VMs. */
  cloudLaunches: defineSearchAttributeKey('CloudLaunches', SearchAttributeType.KEYWORD_LIST),
  /** A Machine's spec.clusterName and spec.providerID. */
  clusterName: defineSearchAttributeKey('ClusterName', SearchAttributeType.KEYWORD),
  providerId: defineSearchAttributeKey('ProviderID', SearchAttributeType.KEYWORD),
  /** A ClusterOperation's action (`upgrade-cluster.yml`). */
  action: defineSearchAttributeKey('Action', SearchAttributeType.KEYWORD),
} as const;

export const KIND = {
  taskRun: 'taskrun',
  allocator: 'allocator',
  hostConfig: 'hostconfig',
  cloudGc: 'cloud-gc',
  taskRunGc: 'taskrun-gc',
  provisioning: 'provisioning',
  software: 'software',
  bpaCluster: 'bpa-cluster',
  machine: 'machine',
  rollout: 'rollout',
  rolloutNode: 'rollout-node',
  clusterOperation: 'cluster-operation',
} as const;

/** The type names `temporal operator search-attribute create --type` takes. */
export const SA_TYPE_NAMES: Record<SearchAttributeType, string> = {
  [SearchAttributeType.TEXT]: 'Text',
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.INT]: 'Int',
  [SearchAttributeType.DOUBLE]: 'Double',
  [SearchAttributeType.BOOL]: 'Bool',
  [SearchAttributeType.DATETIME]: 'Datetime',
  [SearchAttributeType.KEYWORD_LIST]: 'KeywordList',
};
