// Workflow bundle entry: every workflow type the worker serves.
export { taskRunWorkflow } from './taskrun.js';
export { allocatorWorkflow } from './allocator.js';
export { hostConfigWorkflow } from './host-config.js';
export { cloudGcWorkflow } from './cloud-gc.js';
