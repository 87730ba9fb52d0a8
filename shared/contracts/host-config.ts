// The host-config workflow's contract (`hostconfig/<engine namespace>`): its input, the signal
// the bridge sends for each version of the ConfigMap, and how it is started.
import { defineSignal } from '@temporalio/workflow';
import { HOST_CONFIG_NAME } from '../../platform-config/contract.js';
import { KIND } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';

export interface HostConfigWorkflowInput {
  engineNamespace: string;
  /** The last resourceVersion handled, carried across continue-as-new. */
  handled?: string;
  /** Events a run's history may reach before it continues as new (default 2,000). */
  maxHistory?: number;
}

export type HostConfigWorkflow = (input: HostConfigWorkflowInput) => Promise<void>;

export const hostConfigObserved = defineSignal<[{ resourceVersion: string }]>('hostConfigObserved');

export function hostConfigStart(engineNamespace: string): WorkflowStart<HostConfigWorkflow> {
  return {
    workflowType: 'hostConfigWorkflow',
    workflowId: WORKFLOW_ID.hostConfig(engineNamespace),
    args: [{ engineNamespace }],
    typedSearchAttributes: objectAttributes(KIND.hostConfig, {
      namespace: engineNamespace,
      name: HOST_CONFIG_NAME,
    }),
    staticSummary: `host-config of ${engineNamespace}`,
    staticDetails: `Checks each version of ConfigMap ${engineNamespace}/${HOST_CONFIG_NAME} and tells the allocators to reload it.`,
  };
}
