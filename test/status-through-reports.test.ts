// The lint rule hostflow/status-through-reports (eslint-rules/status-through-reports.js) as the
// repository's eslint.config.js applies it (support/lint-rule.ts). Pure: no stack, no files.
import { describe, expect, it } from '@jest/globals';
import { refusedBy } from './support/lint-rule.js';

const refused = refusedBy('hostflow/status-through-reports');

const MEMBER_CALL = `declare const api: { writeMachineStatus(input: unknown): Promise<void> };
export const write = () => api.writeMachineStatus({});
`;

describe('status-through-reports', () => {
  it('refuses a status-writing activity called from workflow code outside a report', async () => {
    expect(await refused('workflows/machine/provision.ts', MEMBER_CALL)).toEqual([
      'export const write = () => api.writeMachineStatus({});',
    ]);
    // locks/hold.ts is in the workflow layer (LOCKS_LAYERS).
    expect(await refused('locks/hold.ts', MEMBER_CALL)).toHaveLength(1);
  });

  it('refuses it quoted, passed on, called bare or destructured', async () => {
    const code = `declare const api: Record<string, (input: unknown) => Promise<void>>;
declare function writePoolStatus(input: unknown): Promise<void>;
export const quoted = () => api['writeBpaStatus']!({});
export const passed = [api.writeProvisioningStatus];
export const bare = () => writePoolStatus({});
export const { writeClusterOperationStatus } = api;
export const other = () => api.writeClusterIpMap!({});
`;
    expect(await refused('workflows/provisioning/operations.ts', code)).toEqual([
      "export const quoted = () => api['writeBpaStatus']!({});",
      'export const passed = [api.writeProvisioningStatus];',
      'export const bare = () => writePoolStatus({});',
      'export const { writeClusterOperationStatus } = api;',
    ]);
  });

  it('lets the report modules write, and code outside the workflow layer', async () => {
    for (const path of [
      'workflows/machine/report.ts',
      'workflows/provisioning/operations-report.ts',
      'workflows/kit/resource-status.ts',
      'activities/kubernetes/machines.ts',
    ]) {
      expect(await refused(path, MEMBER_CALL)).toEqual([]);
    }
  });
});
