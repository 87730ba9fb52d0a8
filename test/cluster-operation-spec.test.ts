// checkOperationSpec: the steps a ClusterOperation's spec runs, or every problem with it, before
// anything runs. Pure: the workflow and the tests share it.
import { describe, expect, it } from '@jest/globals';
import { BUILTIN_PLAYBOOKS, checkOperationSpec } from '../shared/cluster-operation-api.js';
import { ALLOWED_VARS, allowList, deniedVar } from '../shared/cluster-operation-vars.js';

const actions = { actionSource: 'configmap', actionSourceRef: { name: 'actions' } };

describe('a ClusterOperation spec', () => {
  it('runs a ConfigMap playbook or script as a custom action, and kubespray entry points as built in', () => {
    const checked = checkOperationSpec({
      provisioning: 'ops',
      ...actions,
      action: 'site.yml',
      preHook: [{ ...actions, actionType: 'shell', action: 'drain.sh' }],
      postHook: [{ action: 'cluster.yml', always: true }],
    });
    expect(checked).toEqual({
      ok: true,
      steps: [
        {
          name: 'preHook[0]',
          action: 'actions/drain.sh',
          custom: { type: 'shell', configMap: 'actions', key: 'drain.sh' },
          extraVars: {},
          always: false,
        },
        {
          name: 'action',
          action: 'actions/site.yml',
          custom: { type: 'playbook', configMap: 'actions', key: 'site.yml' },
          extraVars: {},
          always: false,
        },
        { name: 'postHook[0]', action: 'cluster.yml', extraVars: {}, always: true },
      ],
    });
  });

  it('says what is wrong with each step', () => {
    expect(
      checkOperationSpec({
        provisioning: 'ops',
        actionType: 'shell',
        action: 'cluster.yml',
        dryRun: true,
        preHook: [{ actionSource: 'configmap', action: '../x/y.sh' }],
        postHook: [{ ...actions, actionType: 'shell', action: 'undo.sh' }],
      }),
    ).toEqual({
      ok: false,
      problems: [
        'spec.preHook[0].actionSourceRef.name is missing: the name of a ConfigMap in this namespace',
        `spec.preHook[0].action "../x/y.sh" is not a key of that ConfigMap's data`,
        'spec: a shell action comes from actionSource configmap',
        'spec.postHook[0]: a shell action has no dry run; run it without spec.dryRun',
      ],
    });
  });

  it('takes a destructive action only as the action, confirmed, with remove-node.yml naming nodes', () => {
    expect(
      checkOperationSpec({
        provisioning: 'ops',
        action: 'remove-node.yml',
        preHook: [{ action: 'reset.yml' }],
      }),
    ).toEqual({
      ok: false,
      problems: [
        'spec.preHook[0]: reset.yml takes Kubernetes off nodes: run it as an action',
        'spec.confirm is missing: remove-node.yml takes Kubernetes off nodes; name the cluster',
        'spec.nodes must list the labels of the workers to remove',
      ],
    });
    const checked = checkOperationSpec({
      provisioning: 'ops',
      action: 'remove-node.yml',
      confirm: 'edge',
      nodes: ['worker2'],
    });
    expect(checked).toMatchObject({
      ok: true,
      steps: [{ action: 'remove-node.yml', nodes: ['worker2'] }],
    });
    expect(
      checkOperationSpec({ provisioning: 'ops', action: 'cluster.yml', nodes: ['a'] }),
    ).toEqual({
      ok: false,
      problems: ['spec.nodes is for remove-node.yml only'],
    });
  });
});

describe("a ClusterOperation's variables", () => {
  it('has no allow-list that holds a denied name, and none could be made', () => {
    for (const [playbook, names] of Object.entries(ALLOWED_VARS)) {
      expect([playbook, names.filter((name) => deniedVar(name) !== undefined)]).toEqual([
        playbook,
        [],
      ]);
    }
    expect(Object.keys(ALLOWED_VARS).sort()).toEqual([...BUILTIN_PLAYBOOKS].sort());
    expect(() => allowList(['kube_version', 'download_run_once', 'kubectl_localhost'])).toThrow(
      'denied variables in an allow-list: download_run_once, kubectl_localhost',
    );
  });
});
