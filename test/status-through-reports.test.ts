// The lint rule hostflow/status-through-reports (eslint-rules/status-through-reports.js) as the
// repository's eslint.config.js applies it: code linted as if it were at a path in the tree, so
// the rule's registration and the files it covers are tested too. Pure: no stack, no files.
import { describe, expect, it } from '@jest/globals';
import { ESLint } from 'eslint';
import { join } from 'node:path';
import { REPO_ROOT } from '../local-stack/paths.js';

const RULE = 'hostflow/status-through-reports';
const eslint = new ESLint({ cwd: REPO_ROOT });

/** The names the rule refuses in `code`, as if it were the file at `path`. */
async function refused(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(REPO_ROOT, path) });
  return result!.messages
    .filter((m) => m.ruleId === RULE)
    .map((m) => code.split('\n')[m.line - 1]!.trim());
}

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
