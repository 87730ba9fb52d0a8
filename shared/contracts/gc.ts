// The garbage collectors' contract (`cloud-gc/<engine namespace>`, `taskrun-gc/<engine
// namespace>`): their inputs, the signal that asks for a pass now, and how each is started.
import { defineSignal } from '@temporalio/workflow';
import { KIND, SA } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import type { WorkflowStart } from '../workflow-start.js';

export interface CloudGcInput {
  intervalSeconds: number;
}

export interface LeftoversGcInput {
  intervalSeconds: number;
  /** Build users and Secrets younger than this are never collected. */
  graceSeconds: number;
}

export type CloudGcWorkflow = (input: CloudGcInput) => Promise<void>;
export type LeftoversGcWorkflow = (input: LeftoversGcInput) => Promise<void>;

/** Sent by each worker as it starts: collect now rather than at the next interval. */
export const collectNow = defineSignal('collectNow');

export function cloudGcStart(
  engineNamespace: string,
  input: CloudGcInput,
): WorkflowStart<CloudGcWorkflow> {
  return {
    workflowType: 'cloudGcWorkflow',
    workflowId: WORKFLOW_ID.cloudGc(engineNamespace),
    args: [input],
    typedSearchAttributes: [{ key: SA.kind, value: KIND.cloudGc }],
    staticSummary: 'Cloud VM garbage collection',
  };
}

export function leftoversGcStart(
  engineNamespace: string,
  input: LeftoversGcInput,
): WorkflowStart<LeftoversGcWorkflow> {
  return {
    workflowType: 'taskRunLeftoversGcWorkflow',
    workflowId: WORKFLOW_ID.taskRunGc(engineNamespace),
    args: [input],
    typedSearchAttributes: [{ key: SA.kind, value: KIND.taskRunGc }],
    staticSummary: 'Garbage collection of build users and Secrets',
  };
}
