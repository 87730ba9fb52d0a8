// What every step of one Machine's workflow shares (machine.ts builds it; provision.ts,
// running.ts and deletion.ts take it). Its own file so that the steps import it downward
// instead of from the workflow that calls them. Types only.
import type { MachineRef, MachineObservation } from '../../shared/contracts/machine.js';
import type { SlotMail } from '../kit/allocator-slot.js';
import type { MachineInfra } from './infrastructure.js';
import type { MachineReport } from './report.js';

/** What every step of one Machine's workflow shares. */
export interface MachineRun {
  ref: MachineRef;
  report: MachineReport;
  /** The Machine as last observed. */
  latest(): MachineObservation;
  deleting(): boolean;
  /** Returns at once unless paused; else waits, saying so, until unpaused. */
  unpaused(): Promise<void>;
  mail: SlotMail;
  infra?: MachineInfra;
  nodeName?: string;
  /** How long a Node may take to join before the Machine says so (HostflowMachine). */
  nodeStartupMs?: number;
}
