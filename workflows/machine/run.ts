// What every step of one HostflowMachine's workflow shares (machine.ts builds it; provision.ts,
// running.ts and release.ts take it). Its own file so that the steps import it downward
// instead of from the workflow that calls them. Types only.
import type { MachineRef, MachineObservation } from '../../shared/contracts/machine.js';
import type { SlotMail } from '../kit/allocator-slot.js';
import type { MachineInfra } from './infrastructure.js';
import type { MachineReport } from './report.js';

/** What every step of one HostflowMachine's workflow shares. */
export interface MachineRun {
  ref: MachineRef;
  report: MachineReport;
  /** The HostflowMachine as last observed. */
  latest(): MachineObservation;
  deleting(): boolean;
  /**
   * Returns at once unless it or its Cluster is paused; else waits, saying so, until neither
   * is (or it is being deleted while its Cluster is not paused).
   */
  unpaused(): Promise<void>;
  mail: SlotMail;
  /** What its owner Machine said once its bootstrap data was there. */
  owner?: OwnerInfo;
  infra?: MachineInfra;
}

/** The Machine a HostflowMachine serves, as read when its bootstrap data was ready. */
export interface OwnerInfo {
  machineName: string;
  machineUid: string;
  clusterName: string;
  dataSecretName: string;
}
