// The rollout workflow's contract (`rollout/<pool>`): what starters pass, what the bridge tells
// it of its MachineConfigPool, the node its activities log in to, and how it is started; and its
// per-node children's (`rollout/<pool>/<node>/<image key>`), which only the pool's workflow starts.
import { defineSignal } from '@temporalio/workflow';
import type { MachineConfigPoolSpec } from '../mco-api.js';
import type { OsImageSource } from '../os-image.js';
import { KIND } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';

/** What a starter passes; a run carries more across continue-as-new (rollout.ts). */
export interface RolloutStartInput {
  pool: string;
}

export type RolloutWorkflow = (input: RolloutStartInput) => Promise<void>;

/** hostflow's settings for the pool, from its annotations (see deploy/examples/rollout.yaml). */
export interface RolloutSettings {
  /** SSH login to the nodes: user and the key's Secret in the engine namespace. */
  sshUser: string;
  sshSecret: string;
  drainTimeout?: string;
  bootTimeout?: string;
}

/** A MachineConfigPool as the bridge sees it, with the image its MachineConfigs render to. */
export interface PoolObservation {
  uid: string;
  generation: number;
  spec: MachineConfigPoolSpec;
  /** The effective image and where it comes from; none when no base image is configured. */
  target?: OsImageSource;
  settings: RolloutSettings;
  deleted: boolean;
  /**
   * With `deleted`: the pool is still there and labelled for this engine, which does not serve it
   * (the MCO runs here); why, for its workflow to say on the pool.
   */
  notServed?: string;
}

export const poolObserved = defineSignal<[PoolObservation]>('poolObserved');

/** A pool's node as its OS image activities log in to it. */
export interface NodeHost {
  /** The Node's name, for messages. */
  name: string;
  address: string;
  port?: number;
  user: string;
  /** The key's Secret in the engine namespace. */
  keySecret: string;
}

/** One node's update, a child of its pool's workflow (workflows/rollout/node-update.ts). */
export interface NodeUpdateInput {
  pool: string;
  node: string;
  image: string;
  host: NodeHost;
  drainTimeoutMs: number;
  bootTimeoutMs: number;
}

export type NodeUpdateResult = { done: true } | { done: false; step: string; reason: string };

export type NodeUpdateWorkflow = (input: NodeUpdateInput) => Promise<NodeUpdateResult>;

export function rolloutStart(pool: string): WorkflowStart<RolloutWorkflow> {
  return {
    workflowType: 'rolloutWorkflow',
    workflowId: WORKFLOW_ID.rollout(pool),
    args: [{ pool }],
    typedSearchAttributes: objectAttributes(KIND.rollout, { name: pool }),
    staticSummary: `MachineConfigPool ${pool}`,
    staticDetails:
      'Rolls the pool’s OS image out within maxUnavailable: preflight, then per node ' +
      'cordon, drain, rpm-ostree rebase, reboot, check, uncordon; stops on a failure.',
  };
}
