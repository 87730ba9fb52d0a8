// Reading ansible-playbook's output: failures as ansible prints them on one line (no config) and
// over several (kubespray's ansible.cfg), recorded from real runs.
import { describe, expect, it } from '@jest/globals';
import { PlaybookProgress } from '../activities/ansible/progress.js';

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
