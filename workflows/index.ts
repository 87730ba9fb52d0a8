// Workflow bundle entry: every workflow type the worker serves.
export { taskRunWorkflow } from './taskrun/taskrun.js';
export { allocatorWorkflow } from './allocator/allocator.js';
export { hostConfigWorkflow } from './host-config/host-config.js';
export { cloudGcWorkflow } from './gc/cloud-gc.js';
export { taskRunLeftoversGcWorkflow } from './gc/taskrun-leftovers.js';
export { provisioningWorkflow } from './provisioning/provisioning.js';
export { softwareWorkflow } from './software/software.js';
export { bpaClusterWorkflow } from './bpa-cluster/cluster.js';
export { machineWorkflow } from './machine/machine.js';
export { rolloutWorkflow } from './rollout/rollout.js';
export { nodeUpdateWorkflow } from './rollout/node-update.js';
