// Workflow bundle entry: every workflow type the worker serves.
export { taskRunWorkflow } from './taskrun.js';
