// The signal a worker build that became current sends every long-lived workflow of its task
// queue (workers/worker-deployment.ts). No workflow handles it: the workflow task it brings is
// enough for the workflow to see another build is current (workflows/kit/new-build.ts).
import { defineSignal } from '@temporalio/workflow';

export const buildChanged = defineSignal('buildChanged');
