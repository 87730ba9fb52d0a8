// checkOperationSpec: the steps a ClusterOperation's spec runs, or every problem with it, before
// anything runs. Pure: the workflow and the tests share it.
import { describe, expect, it } from '@jest/globals';
import { checkOperationSpec } from '../shared/cluster-operation-api.js';
import {
  checkOperationLimits,
  MAX_OPERATION_NODES,
  MAX_SPEC_BYTES,
  specSize,
  utf8Bytes,
} from '../shared/cluster-operation-limits.js';

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

// The limits the Provisioning's workflow checks as an operation joins its line (v17). Through the
// API server, the CRD's maxItems refuses more nodes first: this is the check behind it.
describe("a ClusterOperation spec's size", () => {
  it('is refused over MAX_SPEC_BYTES of JSON, counted in UTF-8 bytes', () => {
    expect(utf8Bytes('aé€😀')).toBe(1 + 2 + 3 + 4);
    const spec = {
      provisioning: 'ops',
      action: 'upgrade-cluster.yml',
      extraVars: { motd: '€'.repeat(MAX_SPEC_BYTES / 3) },
    };
    const bytes = specSize(spec);
    expect(bytes).toBeGreaterThan(MAX_SPEC_BYTES);
    expect(JSON.stringify(spec).length).toBeLessThan(MAX_SPEC_BYTES);
    expect(checkOperationLimits(spec)).toEqual([
      `spec is ${bytes} bytes of JSON: at most ${MAX_SPEC_BYTES}, hooks and extraVars included`,
    ]);
    // As the bridge measured it, when it did not send it whole.
    expect(checkOperationLimits({ provisioning: 'ops' }, bytes)).toHaveLength(1);
    expect(checkOperationLimits({ provisioning: 'ops', action: 'cluster.yml' })).toEqual([]);
  });

  it('is refused when it lists more than MAX_OPERATION_NODES nodes', () => {
    const nodes = (n: number) => Array.from({ length: n }, (_, i) => `worker${i}`);
    const spec = { provisioning: 'ops', action: 'remove-node.yml', confirm: 'edge' };
    expect(checkOperationLimits({ ...spec, nodes: nodes(MAX_OPERATION_NODES) })).toEqual([]);
    expect(checkOperationLimits({ ...spec, nodes: nodes(MAX_OPERATION_NODES + 1) })).toEqual([
      `spec.nodes lists ${MAX_OPERATION_NODES + 1} nodes: at most ${MAX_OPERATION_NODES}`,
    ]);
  });
});
