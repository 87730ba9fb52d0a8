// checkOperationSpec: the steps a ClusterOperation's spec runs, or every problem with it, before
// anything runs, its variables included (shared/cluster-operation-vars.ts). Pure: the workflow and
// the tests share it.
import { describe, expect, it } from '@jest/globals';
import { BUILTIN_PLAYBOOKS, checkOperationSpec } from '../shared/cluster-operation-api.js';
import { ALLOWED_VARS, allowList, deniedVar } from '../shared/cluster-operation-vars.js';
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

describe("a ClusterOperation's variables", () => {
  const UPGRADE_TAKES =
    'kube_version, serial, drain_grace_period, drain_timeout, upgrade_node_pause_seconds or ' +
    'upgrade_node_post_upgrade_pause_seconds';

  it('are those its action takes, and a refusal names the ones it does', () => {
    expect(
      checkOperationSpec({
        provisioning: 'ops',
        action: 'upgrade-cluster.yml',
        extraVars: {
          kube_version: '1.35.1',
          serial: 1,
          upgrade_node_confirm: true,
          upgrade_node_post_upgrade_confirm: true,
        },
        preHook: [{ action: 'cluster.yml', extraVars: { kube_version: '1.35.1', serial: 1 } }],
        postHook: [{ action: 'reset.yml', extraVars: { kube_version: '1.35.1' } }],
      }),
    ).toEqual({
      ok: false,
      problems: [
        'spec.preHook[0].extraVars: serial is not a variable cluster.yml takes from an ' +
          'operation: use kube_version',
        'spec.extraVars: upgrade_node_confirm and upgrade_node_post_upgrade_confirm are not ' +
          `variables upgrade-cluster.yml takes from an operation: use ${UPGRADE_TAKES}`,
        'spec.postHook[0].extraVars: kube_version is not a variable reset.yml takes from an ' +
          'operation: use flush_iptables or reset_restart_network',
        'spec.postHook[0]: reset.yml takes Kubernetes off nodes: run it as an action',
      ],
    });
    expect(
      checkOperationSpec({
        provisioning: 'ops',
        action: 'remove-node.yml',
        confirm: 'edge',
        nodes: ['worker2'],
        extraVars: { reset_nodes: false, allow_ungraceful_removal: true, drain_timeout: '60s' },
        postHook: [{ action: 'scale.yml', extraVars: { kube_version: '1.35.1' } }],
      }),
    ).toMatchObject({ ok: true });
  });

  it('never make ansible act on the worker that runs it, whatever the action', () => {
    const onTheWorker = {
      download_localhost: true,
      download_run_once: true,
      image_info_command_on_localhost: 'id > /tmp/owned',
      kubeadm_download_url: 'http://10.0.0.1/kubeadm',
      inventory_hostname: 'localhost',
    };
    const why = (name: string, where = 'spec.extraVars') =>
      `${where}: ${name} is refused for every action: it would have ansible act on the worker ` +
      'that runs it, not on the nodes';
    expect(
      checkOperationSpec({
        provisioning: 'ops',
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.1', ...onTheWorker },
        postHook: [
          { ...actions, action: 'site.yml', extraVars: { label: 'blue', ...onTheWorker } },
        ],
      }),
    ).toEqual({
      ok: false,
      problems: [
        ...['download_localhost', 'download_run_once', 'image_info_command_on_localhost'].map(
          (name) => why(name),
        ),
        'spec.extraVars: kubeadm_download_url is refused for every action: it says where ' +
          'kubespray downloads what the nodes run',
        // The names the action takes, once, after its last refusal.
        "spec.extraVars: inventory_hostname is refused for every action: it is ansible's name " +
          `for the host a task runs on; upgrade-cluster.yml takes ${UPGRADE_TAKES}`,
        // A custom action's own variables pass; the denied ones do not.
        ...['download_localhost', 'download_run_once', 'image_info_command_on_localhost'].map(
          (name) => why(name, 'spec.postHook[0].extraVars'),
        ),
        'spec.postHook[0].extraVars: kubeadm_download_url is refused for every action: it says ' +
          'where kubespray downloads what the nodes run',
        "spec.postHook[0].extraVars: inventory_hostname is refused for every action: it is ansible's " +
          'name for the host a task runs on',
      ],
    });
  });

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
