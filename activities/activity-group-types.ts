// The type of each activity group (family-activities.ts): what its factory in index.ts must make,
// and what the workflows' proxies of that name call.
import type { BareMetalHostActivities } from './kubernetes/baremetalhosts.js';
import type { BootstrapActivities } from './ssh/bootstrap.js';
import type { BpaResourceActivities } from './kubernetes/bpa-resources.js';
import type { CloudActivities } from './cloud/instances.js';
import type { CloudGcActivities } from './gc/cloud-vms.js';
import type { ClusterLogActivities } from './ansible/cluster-logs.js';
import type { ClusterOperationActivities } from './kubernetes/cluster-operations.js';
import type { DeliveryActivities } from './delivery.js';
import type { DhcpActivities } from './dhcp/leases.js';
import type { EventActivities } from './kubernetes/events.js';
import type { HostConfigActivities } from './kubernetes/host-config.js';
import type { ImageLabelActivities } from './registry/image-labels.js';
import type { InstallerKeyActivities } from './ssh/installer-key.js';
import type { KubernetesActivities } from './kubernetes/taskruns.js';
import type { LeftoversGcActivities } from './gc/taskrun-leftovers.js';
import type { LockActivities } from '../locks/adapter.js';
import type { MachineActivities } from './kubernetes/machines.js';
import type { MachineConfigPoolActivities } from './kubernetes/machine-config-pools.js';
import type { NodeActivities } from './kubernetes/nodes.js';
import type { OsImageActivities } from './ssh/os-image.js';
import type { PackageActivities } from './ssh/packages.js';
import type { PlatformLockActivities } from '../locks/platform-secrets.js';
import type { PlaybookActivities } from './ansible/playbook.js';
import type { ProvisioningActivities } from './kubernetes/provisionings.js';
import type { SshActivities } from './ssh/build-users.js';
import type { TemporalActivities } from './temporal/workflows.js';

export interface ActivityGroupTypes {
  BareMetalHostActivities: BareMetalHostActivities;
  BootstrapActivities: BootstrapActivities;
  BpaResourceActivities: BpaResourceActivities;
  CloudActivities: CloudActivities;
  CloudGcActivities: CloudGcActivities;
  ClusterLogActivities: ClusterLogActivities;
  ClusterOperationActivities: ClusterOperationActivities;
  DeliveryActivities: DeliveryActivities;
  DhcpActivities: DhcpActivities;
  EventActivities: EventActivities;
  HostConfigActivities: HostConfigActivities;
  ImageLabelActivities: ImageLabelActivities;
  InstallerKeyActivities: InstallerKeyActivities;
  KubernetesActivities: KubernetesActivities;
  LeftoversGcActivities: LeftoversGcActivities;
  LockActivities: LockActivities;
  MachineActivities: MachineActivities;
  MachineConfigPoolActivities: MachineConfigPoolActivities;
  NodeActivities: NodeActivities;
  OsImageActivities: OsImageActivities;
  PackageActivities: PackageActivities;
  PlatformLockActivities: PlatformLockActivities;
  PlaybookActivities: PlaybookActivities;
  ProvisioningActivities: ProvisioningActivities;
  SshActivities: SshActivities;
  TemporalActivities: TemporalActivities;
}
