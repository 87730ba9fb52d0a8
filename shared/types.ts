// Plain types the bridge, activities and workflows share (docs/architecture.md, "Repository layout"). No code.

/** Which TaskRun: its uid tells it apart from a same-named successor. */
export interface TaskRunRef {
  namespace: string;
  name: string;
  uid: string;
}

// A host that runs builds is defined with the host-config it is parsed from; every part
// imports it from here.
export type { Host } from '../platform-config/host.js';

/**
 * A served Secret this TaskRun already has when its workflow starts: an earlier run of the
 * workflow (terminated by an operator, say) delivered it, and the build may hold its key.
 */
export interface EarlierDelivery {
  /** The build user, one of this TaskRun's own names. */
  user: string;
  address: string;
}

export interface TaskRunWorkflowInput extends TaskRunRef {
  platform: string;
  /** Events a run's history may reach before it continues as new (default 5,000; at least 10). */
  maxHistory?: number;
  /** What an earlier run of this workflow held and answered, carried across continue-as-new. */
  carried?: unknown;
}

export type TaskRunOutcome =
  | { served: 'local' }
  | { served: 'static'; host: string; user: string }
  | { served: 'dynamic'; instance: string; user: string }
  | { served: 'error'; message: string }
  | { served: 'nothing'; reason: string };

export interface AllocatorInput {
  platform: string;
  /** Carried across continue-as-new (plain JSON). */
  state?: unknown;
  /** A dynamic pool's VMs, carried across continue-as-new. */
  pool?: unknown;
  /** How often holders whose run ended are looked for (the engine's resync period). */
  sweepSeconds?: number;
  /** Epoch ms of the last such sweep, carried across continue-as-new. */
  lastSweep?: number;
}

export interface HostConfigWorkflowInput {
  engineNamespace: string;
  /** The last resourceVersion handled, carried across continue-as-new. */
  handled?: string;
  /** Events a run's history may reach before it continues as new (default 2,000). */
  maxHistory?: number;
}

export interface CloudGcInput {
  intervalSeconds: number;
}

export interface LeftoversGcInput {
  intervalSeconds: number;
  /** Build users and Secrets younger than this are never collected. */
  graceSeconds: number;
}

// Workflow signatures, so clients outside the worker start them by name with typed arguments.
export type TaskRunWorkflow = (input: TaskRunWorkflowInput) => Promise<TaskRunOutcome>;
export type AllocatorWorkflow = (input: AllocatorInput) => Promise<void>;
export type HostConfigWorkflow = (input: HostConfigWorkflowInput) => Promise<void>;
export type CloudGcWorkflow = (input: CloudGcInput) => Promise<void>;
export type LeftoversGcWorkflow = (input: LeftoversGcInput) => Promise<void>;

export interface ProvisioningInput {
  namespace: string;
  name: string;
  /** Events a run's history may reach before it continues as new (default 2,000; at least 10). */
  maxHistory?: number;
  /** What an earlier run knew (its cluster, hosts, plan), carried across continue-as-new. */
  carried?: unknown;
}
export type ProvisioningWorkflow = (input: ProvisioningInput) => Promise<void>;
/** A Software and a BPA Cluster are named like a Provisioning. */
export type BpaResourceInput = ProvisioningInput;
export type SoftwareWorkflow = (input: BpaResourceInput) => Promise<void>;
export type BpaClusterWorkflow = (input: BpaResourceInput) => Promise<void>;
