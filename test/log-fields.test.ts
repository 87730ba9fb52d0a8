// What a log line says about its subject, as pure functions: the resource read from each kind of
// workflow ID, the fields picked from an activity's input (and nothing else), and how
// `hostflow start` shows a JSON line.
import { describe, expect, it } from '@jest/globals';
import { prettyLine } from '../cli/pretty-log.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { inputLogFields } from '../workers/activity-log-fields.js';
import { workflowIdFields } from '../workers/temporal-logger.js';

describe('workflowIdFields', () => {
  it('reads the resource of every kind of workflow ID', () => {
    expect(workflowIdFields(WORKFLOW_ID.taskRun('ns', 'tr', 'uid-1'))).toEqual({
      k8sNamespace: 'ns',
      k8sName: 'tr',
    });
    for (const id of [
      WORKFLOW_ID.provisioning('ns', 'p'),
      WORKFLOW_ID.software('ns', 'p'),
      WORKFLOW_ID.bpaCluster('ns', 'p'),
      WORKFLOW_ID.hostflowMachine('ns', 'p'),
    ]) {
      expect(workflowIdFields(id)).toEqual({ k8sNamespace: 'ns', k8sName: 'p' });
    }
    expect(workflowIdFields(WORKFLOW_ID.allocator('linux/arm64'))).toEqual({
      platform: 'linux/arm64',
    });
    expect(workflowIdFields(WORKFLOW_ID.rollout('worker'))).toEqual({ pool: 'worker' });
    expect(workflowIdFields(WORKFLOW_ID.rolloutNode('worker', 'n1', 'sha256:ab'))).toEqual({
      pool: 'worker',
      node: 'n1',
    });
    expect(workflowIdFields(WORKFLOW_ID.hostConfig('engine'))).toEqual({ k8sNamespace: 'engine' });
    expect(workflowIdFields('something-else')).toEqual({});
  });
});

describe('inputLogFields', () => {
  it('picks the platform, host and TaskRun, and nothing else', () => {
    const input = {
      platform: 'linux/arm64',
      host: { name: 'h1', address: '10.0.0.1', secret: 'admin-0' },
      taskRun: { namespace: 'ns', name: 'tr', uid: 'u' },
      privateKey: 'KEY-BODY',
      otp: 'OTP-VALUE',
    };
    expect(inputLogFields([input])).toEqual({
      platform: 'linux/arm64',
      host: 'h1',
      k8sNamespace: 'ns',
      k8sName: 'tr',
    });
    expect(inputLogFields(['a string', 3])).toEqual({});
    expect(inputLogFields([])).toEqual({});
  });
});

describe('prettyLine', () => {
  it('shows level, process, message and fields; other output as it is', () => {
    const time = '2026-01-02T03:04:05.000Z';
    const clock = new Date(time).toTimeString().slice(0, 8);
    const line = JSON.stringify({
      level: 'warn',
      time,
      pid: 7,
      hostname: 'h',
      name: 'worker',
      k8sName: 'tr',
      note: 'two words',
      msg: 'slot wait',
    });
    expect(prettyLine(line, 'worker', 10)).toBe(
      `${clock} WARN  worker      slot wait  k8sName=tr note="two words"`,
    );
    expect(prettyLine('Error: boom', 'bridge')).toMatch(
      /^\d\d:\d\d:\d\d {7}bridge {2}Error: boom$/,
    );
  });
});
