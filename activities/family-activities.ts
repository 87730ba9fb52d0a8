// The activities each family's workflows call, by the adapter type each group of them has (the
// types the workflows' proxies are declared with): a worker registers the groups of the families
// its install runs (HOSTFLOW_FAMILIES), and no others. test/families-activities.test.ts reads the
// workflows' sources and fails when a family's workflows reach a group not listed here.
import type { Family } from '../shared/families.js';
import type { ActivityGroupTypes } from './activity-group-types.js';

/** A group, by its type's name (activity-group-types.ts). */
export type ActivityGroup = keyof ActivityGroupTypes;

/** Locks are taken by the other families' workflows (LockActivities): the locks family has none. */
export const FAMILY_ACTIVITIES: Record<Family, readonly ActivityGroup[]> = {
  taskruns: [
    'CloudActivities',
    'CloudGcActivities',
    'DeliveryActivities',
    'EventActivities',
    'HostConfigActivities',
    'KubernetesActivities',
    'LeftoversGcActivities',
    'LockActivities',
    'PlatformLockActivities',
    'SshActivities',
    'TemporalActivities',
  ],
  provisionings: [
    'BareMetalHostActivities',
    'BpaResourceActivities',
    'ClusterLogActivities',
    'ClusterOperationActivities',
    'DhcpActivities',
    'InstallerKeyActivities',
    'LockActivities',
    'PackageActivities',
    'PlatformLockActivities',
    'PlaybookActivities',
    'ProvisioningActivities',
    'TemporalActivities',
  ],
  'cluster-operations': [
    'ClusterLogActivities',
    'ClusterOperationActivities',
    'PlaybookActivities',
    'TemporalActivities',
  ],
  machines: [
    'BootstrapActivities',
    'CloudActivities',
    'CloudGcActivities',
    'HostConfigActivities',
    'LeftoversGcActivities',
    'LockActivities',
    'MachineActivities',
    'PlatformLockActivities',
    'SshActivities',
    'TemporalActivities',
  ],
  rollouts: [
    'ImageLabelActivities',
    'LockActivities',
    'MachineConfigPoolActivities',
    'NodeActivities',
    'OsImageActivities',
    'PlatformLockActivities',
  ],
  locks: [],
};

/** The groups `families` need, each once. */
export const activityGroupsFor = (families: readonly Family[]): Set<ActivityGroup> =>
  new Set(families.flatMap((family) => FAMILY_ACTIVITIES[family]));
