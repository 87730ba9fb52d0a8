// How a workflow is started, by the bridge, the worker, an activity or a parent workflow: one
// shape for every family. Each family's contract (shared/contracts/) builds its own, typed by the workflow's signature,
// so its arguments are checked where it is started and its id and search attributes are the same
// from every starter (docs/architecture.md, "Workflow families").
import type {
  Priority,
  SearchAttributePair,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
} from '@temporalio/common';
import { SA } from './search-attributes.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any workflow signature
export type Workflow = (...args: any[]) => Promise<unknown>;

/** Everything but the task queue and the first message, which the starter adds. */
export interface WorkflowStart<W extends Workflow = Workflow> {
  /** The workflow's exported name in workflows/index.ts: starters outside the bundle use names. */
  workflowType: string;
  workflowId: string;
  args: Parameters<W>;
  workflowIdReusePolicy?: WorkflowIdReusePolicy;
  workflowIdConflictPolicy?: WorkflowIdConflictPolicy;
  priority?: Priority;
  typedSearchAttributes: SearchAttributePair[];
  /** The UI's one line for it (Temporal takes at most 400 bytes). */
  staticSummary: string;
  /** What it does, for the UI's details pane. */
  staticDetails?: string;
}

/** The search attributes of a workflow that serves one Kubernetes object: its kind and name. */
export function objectAttributes(
  kind: string,
  object: { namespace?: string; name: string },
): SearchAttributePair[] {
  return [
    { key: SA.kind, value: kind },
    ...(object.namespace === undefined ? [] : [{ key: SA.namespace, value: object.namespace }]),
    { key: SA.name, value: object.name },
  ];
}
