// What `hostflow describe taskrun` finds: printed as JSON (`-o json`) or by describe-text.ts.
// Its own file so that describe.ts, which finds it, and describe-text.ts, which shows it, both
// import it downward.
import type { Step } from './timeline.js';

export interface TaskRunDescription {
  taskRun: string;
  workflowId: string;
  runId: string;
  /** RUNNING, COMPLETED, FAILED, TERMINATED, … */
  status: string;
  taskQueue: string;
  startTime: string;
  closeTime: string | null;
  platform: string | null;
  phase: string | null;
  host: string | null;
  failedHosts: string[];
  /** What the bridge last saw of the TaskRun: active, completed or deleted. */
  observed: string | null;
  error: string | null;
  /** `query`: the workflow answered; `search attributes`: it did not (see `unanswered`). */
  source: 'query' | 'search attributes';
  unanswered?: string;
  summary: string | null;
  /** What the workflow says it is doing now (its current details). */
  details: string | null;
  /** Older workflows of a TaskRun of the same name (a re-created TaskRun, a terminated run). */
  earlierWorkflows: number;
  timeline: Step[];
}
