// Workflow bundle entry: every workflow type the worker serves.
import type { AllocatorWorkflow } from '../shared/contracts/allocator.js';
import type { allocatorWorkflow } from './allocator/allocator.js';
import type { BpaClusterWorkflow } from '../shared/contracts/bpa-cluster.js';
import type { bpaClusterWorkflow } from './bpa-cluster/cluster.js';
import type { ClusterOperationLifecycleWorkflow } from '../shared/contracts/cluster-operation.js';
import type { clusterOperationLifecycleWorkflow } from './cluster-operation/lifecycle.js';
import type { CloudGcWorkflow, LeftoversGcWorkflow } from '../shared/contracts/gc.js';
import type { cloudGcWorkflow } from './gc/cloud-gc.js';
import type { taskRunLeftoversGcWorkflow } from './gc/taskrun-leftovers.js';
import type { HostConfigWorkflow } from '../shared/contracts/host-config.js';
import type { hostConfigWorkflow } from './host-config/host-config.js';
import type { HostflowMachineWorkflow } from '../shared/contracts/machine.js';
import type { hostflowMachineWorkflow } from './machine/machine.js';
import type { ProvisioningWorkflow } from '../shared/contracts/provisioning.js';
import type { provisioningWorkflow } from './provisioning/provisioning.js';
import type { NodeUpdateWorkflow, RolloutWorkflow } from '../shared/contracts/rollout.js';
import type { nodeUpdateWorkflow } from './rollout/node-update.js';
import type { rolloutWorkflow } from './rollout/rollout.js';
import type { SoftwareWorkflow } from '../shared/contracts/software.js';
import type { softwareWorkflow } from './software/software.js';
import type { TaskRunWorkflow } from '../shared/contracts/taskrun.js';
import type { taskRunWorkflow } from './taskrun/taskrun.js';

export { taskRunWorkflow } from './taskrun/taskrun.js';
export { allocatorWorkflow } from './allocator/allocator.js';
export { hostConfigWorkflow } from './host-config/host-config.js';
export { cloudGcWorkflow } from './gc/cloud-gc.js';
export { taskRunLeftoversGcWorkflow } from './gc/taskrun-leftovers.js';
export { provisioningWorkflow } from './provisioning/provisioning.js';
export { softwareWorkflow } from './software/software.js';
export { bpaClusterWorkflow } from './bpa-cluster/cluster.js';
export { hostflowMachineWorkflow } from './machine/machine.js';
export { rolloutWorkflow } from './rollout/rollout.js';
export { nodeUpdateWorkflow } from './rollout/node-update.js';
export { clusterOperationLifecycleWorkflow } from './cluster-operation/lifecycle.js';

/** Compiles only if `Workflow` takes what its contract's `Signature` (and typed start) passes. */
type Serves<Signature, Workflow extends Signature> = Workflow;

/** Each workflow against its contract: a typed start can never pass what the workflow does not take. */
export type WorkflowsMatchContracts = [
  Serves<ClusterOperationLifecycleWorkflow, typeof clusterOperationLifecycleWorkflow>,
  Serves<TaskRunWorkflow, typeof taskRunWorkflow>,
  Serves<AllocatorWorkflow, typeof allocatorWorkflow>,
  Serves<HostConfigWorkflow, typeof hostConfigWorkflow>,
  Serves<CloudGcWorkflow, typeof cloudGcWorkflow>,
  Serves<LeftoversGcWorkflow, typeof taskRunLeftoversGcWorkflow>,
  Serves<ProvisioningWorkflow, typeof provisioningWorkflow>,
  Serves<SoftwareWorkflow, typeof softwareWorkflow>,
  Serves<BpaClusterWorkflow, typeof bpaClusterWorkflow>,
  Serves<HostflowMachineWorkflow, typeof hostflowMachineWorkflow>,
  Serves<RolloutWorkflow, typeof rolloutWorkflow>,
  Serves<NodeUpdateWorkflow, typeof nodeUpdateWorkflow>,
];
