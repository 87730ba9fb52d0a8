// What `hostflow describe <kind>` finds, the same shape for every kind: printed as JSON
// (`-o json`) or by describe-text.ts. Its own file so that describe.ts, which finds it, and
// describe-text.ts, which shows it, both import it downward.
import type { Step } from './timeline.js';

/** One fact of a kind (a cluster, a host, a list of nodes); null when nothing says. */
export type Fact = string | string[] | null;

export interface Description {
  /** TaskRun, Provisioning, Software, Cluster, Machine, MachineConfigPool or ClusterOperation. */
  kind: string;
  /** NAMESPACE/NAME, or NAME of a cluster-scoped object (a pool). */
  object: string;
  workflowId: string;
  runId: string;
  /** RUNNING, COMPLETED, FAILED, TERMINATED, … */
  status: string;
  taskQueue: string;
  startTime: string;
  closeTime: string | null;
  phase: string | null;
  /** Who said the phase: the workflow's status query, the object's status, the search attributes or the workflow's current details. */
  phaseFrom: 'query' | 'object' | 'search attributes' | 'details' | null;
  /** The kind's own facts, by name (cluster, hosts, providerID, node, target image, …). */
  facts: Record<string, Fact>;
  /** What the workflow says it is doing now (its current details). */
  details: string | null;
  /** What it waits for now: running activities (attempt, last heartbeat, last failure), timers, updates. */
  waiting: string[];
  error: string | null;
  summary: string | null;
  /** Older workflows of an object of the same name (a re-created TaskRun, a terminated run). */
  earlierWorkflows: number;
  /** What could not be looked at (a workflow that did not answer, an unreadable object). */
  notes: string[];
  timeline: Step[];
}
