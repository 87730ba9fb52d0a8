// Reading ansible-playbook's output: failures as ansible prints them on one line (no config) and
// over several (kubespray's ansible.cfg), recorded from real runs; and what it keeps of a tenant's
// output, bounded however much the tenant prints.
import { describe, expect, it } from '@jest/globals';
import {
  MAX_DESCRIBE,
  MAX_FAILURES,
  MAX_LINE,
  MAX_MESSAGE,
  MAX_NAME,
  MAX_RECAP_HOSTS,
  MAX_RESULT,
  PlaybookProgress,
} from '../activities/ansible/progress.js';
import { BoundedLines, MAX_LINE_BYTES } from '../activities/runner/log-lines.js';

const feed = (output: string) => {
  const progress = new PlaybookProgress();
  for (const line of output.split('\n')) progress.feed(line);
  return progress;
};

describe('playbook progress', () => {
  it('reads a failure whose result is on one line', () => {
    const progress = feed(
      [
        'TASK [Install kubelet] *********************************************************',
        'fatal: [worker-2]: FAILED! => {"changed": false, "msg": "told to fail here"}',
      ].join('\n'),
    );
    expect(progress.failures).toEqual([
      { host: 'worker-2', task: 'Install kubelet', kind: 'failed', message: 'told to fail here' },
    ]);
  });

  it("reads a failure whose result goes over several lines, as kubespray's ansible.cfg prints it", () => {
    const progress = feed(
      [
        'TASK [validate_inventory : Stop if even number of etcd hosts] ******************',
        'fatal: [master-1]: FAILED! => {',
        '    "assertion": "groups.get(\'etcd\', groups.kube_control_plane) | length is not divisibleby 2",',
        '    "changed": false,',
        '    "evaluated_to": false,',
        '    "msg": "Assertion failed"',
        '}',
        '',
        'PLAY RECAP *********************************************************************',
        'master-1                   : ok=9    changed=0    unreachable=0    failed=1    skipped=1    rescued=0    ignored=0   ',
      ].join('\n'),
    );
    expect(progress.failures).toEqual([
      {
        host: 'master-1',
        task: 'validate_inventory : Stop if even number of etcd hosts',
        kind: 'failed',
        message: 'Assertion failed',
      },
    ]);
    expect(progress.recap['master-1']).toEqual({ ok: 9, changed: 0, unreachable: 0, failed: 1 });
  });
});

describe('what the progress keeps of a tenant’s output is bounded', () => {
  it('cuts an over-long line before it parses it, and names and messages', () => {
    const long = 'x'.repeat(10_000);
    const progress = feed(
      [
        `PLAY [${long}] ****`,
        `TASK [${long}] ****`,
        `fatal: [${long}]: FAILED! => {"changed": false, "msg": "${'x'.repeat(1 << 20)}"}`,
      ].join('\n'),
    );
    expect(progress.play).toHaveLength(MAX_NAME);
    expect(progress.task).toHaveLength(MAX_NAME);
    // The line was cut at MAX_LINE, so its JSON does not parse: its msg is read all the same.
    expect(progress.failures).toEqual([
      {
        host: `${'x'.repeat(MAX_NAME - 1)}…`,
        task: progress.task,
        kind: 'failed',
        message: `${'x'.repeat(MAX_MESSAGE - 1)}…`,
      },
    ]);
  });

  it('keeps the first failures and recap hosts, counting the rest, and heartbeats with a few', () => {
    const hosts = Array.from({ length: 2000 }, (_, i) => `node-${i}`);
    const task = `Install kubelet ${'and more '.repeat(10)}`;
    const progress = feed(
      [
        `TASK [${task}] ****`,
        ...hosts.map(
          (h) => `fatal: [${h}]: UNREACHABLE! => {"msg": "no route", "unreachable": true}`,
        ),
        'PLAY RECAP ****',
        ...hosts.map((h) => `${h} : ok=1 changed=0 unreachable=1 failed=0 skipped=0`),
      ].join('\n'),
    );
    expect(progress.failures).toHaveLength(MAX_FAILURES);
    expect(progress.failures[0]).toEqual({
      host: 'node-0',
      task,
      kind: 'unreachable',
      message: 'no route',
    });
    expect(progress.failuresOmitted).toBe(hosts.length - MAX_FAILURES);
    expect(Object.keys(progress.recap)).toEqual(hosts.slice(0, MAX_RECAP_HOSTS));
    expect(progress.recapOmitted).toBe(hosts.length - MAX_RECAP_HOSTS);
    expect(progress.describe()).toHaveLength(MAX_DESCRIBE);
  });

  it("holds at most MAX_RESULT of a failure's result over lines, and still reads its msg", () => {
    const progress = new PlaybookProgress();
    progress.feed('TASK [Run the script] ****');
    progress.feed('fatal: [worker-1]: FAILED! => {');
    progress.feed('    "changed": true,');
    progress.feed('    "stdout_lines": [');
    let most = 0;
    for (let i = 0; i < 200_000; i++) {
      progress.feed(`        "line ${i} of what the script printed, over and over",`);
      most = Math.max(most, progress.held);
    }
    expect(most).toBeLessThanOrEqual(MAX_RESULT);
    progress.feed('    ],');
    progress.feed('    "msg": "non-zero return code"');
    // A script can print what it likes: more msg lines are not held.
    for (let i = 0; i < 1000; i++) {
      progress.feed(`    "msg": "${'z'.repeat(1000)}"`);
      most = Math.max(most, progress.held);
    }
    progress.feed('}');
    expect(most).toBeLessThanOrEqual(MAX_RESULT + '    "msg": "non-zero return code"'.length);
    expect(progress.held).toBe(0);
    expect(progress.failures).toEqual([
      { host: 'worker-1', task: 'Run the script', kind: 'failed', message: 'non-zero return code' },
    ]);
  });
});

describe('a run’s output read as the runner reads it', () => {
  it('keeps MAX_LINE of a 2 GiB line without a newline, and reads the lines after it', () => {
    const chunk = Buffer.alloc(1 << 20, 'y');
    const chunks = 2048; // 2 GiB, the same chunk over and over, as a pod's log sends it
    const progress = new PlaybookProgress();
    const lines: string[] = [];
    const log = new BoundedLines((line) => {
      lines.push(line.slice(0, 40));
      progress.feed(line);
    });
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < chunks; i++) log.feed(chunk);
    log.feed(Buffer.from('\nTASK [After the long line] ****\nfatal: [w'));
    log.feed(Buffer.from('orker-3]: FAILED! => {"msg": "still read"}\n'));
    log.end();
    expect(MAX_LINE).toBe(MAX_LINE_BYTES);
    expect(log.dropped).toBe(chunks * chunk.length - MAX_LINE);
    // Nothing near the 2 GiB fed was kept (the one chunk is reused; a kept line would show).
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
    expect(lines).toEqual([
      'y'.repeat(40),
      'TASK [After the long line] ****',
      'fatal: [worker-3]: FAILED! => {"msg": "s',
    ]);
    expect(progress.failures).toEqual([
      { host: 'worker-3', task: 'After the long line', kind: 'failed', message: 'still read' },
    ]);
  });
});
