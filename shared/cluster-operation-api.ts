// The ClusterOperation resource (hostflow.dev/v1alpha1, deploy/families/cluster-operations/):
// a day-2 action on the cluster a Provisioning in its namespace installed, after kubean's
// ClusterOperation. Its coordinates, its spec as hostflow reads it, and the check every spec
// passes before anything runs (pure, so the workflow and the tests share it).
import { varNameProblems } from './cluster-operation-vars.js';

export const CLUSTER_OPERATION_API = {
  group: 'hostflow.dev',
  version: 'v1alpha1',
  plural: 'clusteroperations',
} as const;

/** kubespray's entry points an operation may run, as `actionSource: builtin`. */
export const BUILTIN_PLAYBOOKS = [
  'upgrade-cluster.yml',
  'cluster.yml',
  'scale.yml',
  'remove-node.yml',
  'reset.yml',
] as const;
/**
 * Those that take Kubernetes off nodes: only as an operation's action, with `spec.confirm`
 * naming the cluster. The Provisioning still holds the nodes: `cluster.yml` or `scale.yml`
 * installs them again.
 */
export const DESTRUCTIVE_PLAYBOOKS: readonly string[] = ['remove-node.yml', 'reset.yml'];
export type BuiltinPlaybook = (typeof BUILTIN_PLAYBOOKS)[number];

/** What a step runs: a playbook (kubespray's or the tenant's), or the tenant's shell script. */
export const ACTION_TYPES = ['playbook', 'shell'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];
/** Where a step's action comes from: kubespray (BUILTIN_PLAYBOOKS), or a ConfigMap's key. */
export const ACTION_SOURCES = ['builtin', 'configmap'] as const;

/** Ended operations a Provisioning keeps when its spec.operationHistoryLimit is unset. */
export const DEFAULT_OPERATION_HISTORY = 10;

/** One step: the action itself, or a hook before or after it. */
export interface OperationStepSpec {
  /** A kubespray entry point (BUILTIN_PLAYBOOKS), or the key of actionSourceRef's data. */
  action?: string;
  actionType?: string;
  actionSource?: string;
  /** The ConfigMap in this namespace that holds a `configmap` action. */
  actionSourceRef?: { name?: string };
  /** Variables for this step: names as ansible takes them, JSON values. */
  extraVars?: Record<string, unknown>;
}

export interface PostHookSpec extends OperationStepSpec {
  /** Also after the action or an earlier hook failed. */
  always?: boolean;
}

export interface ClusterOperationSpec extends OperationStepSpec {
  /** The Provisioning in this namespace whose cluster it acts on. */
  provisioning?: string;
  preHook?: OperationStepSpec[];
  postHook?: PostHookSpec[];
  /** How long the whole operation may run once it has its turn, hooks included. */
  activeDeadlineSeconds?: number;
  /** Every step runs with ansible's --check: nothing changes, and the status says what would. */
  dryRun?: boolean;
  /** The cluster's name, which a destructive action (DESTRUCTIVE_PLAYBOOKS) must be given. */
  confirm?: string;
  /** remove-node.yml only: the workers to remove, by their labels in the Provisioning. */
  nodes?: string[];
}

/** A tenant's own action: read from its ConfigMap when the operation starts, run sandboxed. */
export interface CustomActionRef {
  type: ActionType;
  configMap: string;
  key: string;
}

/** A step as the workflow runs it, once checked. */
export interface OperationStep {
  /** `preHook[0]`, `action`, `postHook[1]`: where it is in the spec. */
  name: string;
  /** What it runs, as the status says: the kubespray entry point, or `<ConfigMap>/<key>`. */
  action: string;
  custom?: CustomActionRef;
  /** remove-node.yml: the nodes it removes. */
  nodes?: string[];
  extraVars: Record<string, unknown>;
  /** Post hooks only: also after a failure. */
  always: boolean;
}

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Jinja's delimiters: ansible renders them on the worker, so no value may carry one. */
const TEMPLATE = /\{\{|\{%|\{#/;
const MAX_EXTRA_VARS_BYTES = 16 * 1024;
/** A ConfigMap's name, and a key of its data, as the API server takes them. */
const DNS_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]{1,253}$/;
/** A node's label in a Provisioning (its inventory name). */
const NODE_LABEL = /^[A-Za-z0-9]([-_.A-Za-z0-9]{0,61}[A-Za-z0-9])?$/;
const MAX_HOOKS = 10;
const MAX_DEADLINE_SECONDS = 7 * 24 * 3600;

/** The steps of a spec in the order they run; or every problem with it, each actionable. */
export function checkOperationSpec(
  spec: ClusterOperationSpec,
): { ok: true; steps: OperationStep[] } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  if (!spec.provisioning) {
    problems.push(`spec.provisioning is missing: name the Provisioning whose cluster to act on`);
  }
  const step = (s: OperationStepSpec, name: string, always = false): OperationStep | undefined => {
    const before = problems.length;
    const type = s.actionType ?? 'playbook';
    const source = s.actionSource ?? 'builtin';
    if (!(ACTION_TYPES as readonly string[]).includes(type)) {
      problems.push(`${name}.actionType "${type}" is not one: use ${ACTION_TYPES.join(' or ')}`);
    }
    if (!(ACTION_SOURCES as readonly string[]).includes(source)) {
      problems.push(
        `${name}.actionSource "${source}" is not one: use ${ACTION_SOURCES.join(' or ')}`,
      );
    }
    const playbook =
      source === 'configmap' ? undefined : BUILTIN_PLAYBOOKS.find((p) => p === s.action);
    problems.push(...checkExtraVars(s.extraVars, `${name}.extraVars`, playbook));
    if (source === 'configmap') {
      const configMap = s.actionSourceRef?.name ?? '';
      if (!DNS_NAME.test(configMap)) {
        problems.push(
          `${name}.actionSourceRef.name ${configMap ? `"${configMap}" is not` : 'is missing:'} ` +
            'the name of a ConfigMap in this namespace',
        );
      }
      const key = s.action ?? '';
      if (!CONFIG_KEY.test(key)) {
        problems.push(
          `${name}.action ${key ? `"${key}" is not` : 'is missing:'} a key of that ConfigMap's data`,
        );
      }
      if (type === 'shell' && spec.dryRun) {
        problems.push(`${name}: a shell action has no dry run; run it without spec.dryRun`);
      }
      if (problems.length > before) return undefined;
      const custom = { type: type as ActionType, configMap, key };
      return { name, action: `${configMap}/${key}`, custom, extraVars: s.extraVars ?? {}, always };
    }
    if (type === 'shell')
      problems.push(`${name}: a shell action comes from actionSource configmap`);
    if (!playbook) {
      problems.push(
        `${name}.action ${s.action === undefined ? 'is missing' : `"${s.action}" is not one`}: ` +
          `use one of ${BUILTIN_PLAYBOOKS.join(', ')}`,
      );
    }
    if (playbook && DESTRUCTIVE_PLAYBOOKS.includes(playbook) && name !== 'spec') {
      problems.push(`${name}: ${playbook} takes Kubernetes off nodes: run it as an action`);
    }
    if (problems.length > before || !playbook) return undefined;
    return { name, action: playbook, extraVars: s.extraVars ?? {}, always };
  };
  const pre = spec.preHook ?? [];
  const post = spec.postHook ?? [];
  if (pre.length > MAX_HOOKS || post.length > MAX_HOOKS) {
    problems.push(`spec.preHook and spec.postHook take at most ${MAX_HOOKS} hooks each`);
  }
  const deadline = spec.activeDeadlineSeconds;
  if (
    deadline !== undefined &&
    (!Number.isInteger(deadline) || deadline < 1 || deadline > MAX_DEADLINE_SECONDS)
  ) {
    problems.push(
      `spec.activeDeadlineSeconds must be a whole number of seconds from 1 to ${MAX_DEADLINE_SECONDS}`,
    );
  }
  const steps = [
    ...pre.map((h, i) => step(h, `spec.preHook[${i}]`)),
    step(spec, 'spec'),
    ...post.map((h, i) => step(h, `spec.postHook[${i}]`, h.always === true)),
  ];
  problems.push(...checkDestructive(spec));
  if (problems.length) return { ok: false, problems };
  return {
    ok: true,
    steps: steps.map((s, i) => ({
      ...s!,
      name: i === pre.length ? 'action' : s!.name.replace(/^spec\./, ''),
      ...(i === pre.length && spec.nodes ? { nodes: spec.nodes } : {}),
    })),
  };
}

/** A destructive action's confirmation, and remove-node.yml's nodes (only there). */
function checkDestructive(spec: ClusterOperationSpec): string[] {
  const problems: string[] = [];
  const action = spec.actionSource === 'configmap' ? undefined : spec.action;
  if (action && DESTRUCTIVE_PLAYBOOKS.includes(action) && !spec.confirm) {
    problems.push(
      `spec.confirm is missing: ${action} takes Kubernetes off nodes; name the cluster`,
    );
  }
  const nodes = spec.nodes;
  if (action === 'remove-node.yml') {
    if (!Array.isArray(nodes) || !nodes.length || !nodes.every((n) => NODE_LABEL.test(n))) {
      problems.push('spec.nodes must list the labels of the workers to remove');
    }
  } else if (nodes !== undefined) {
    problems.push('spec.nodes is for remove-node.yml only');
  }
  return problems;
}

/**
 * A step's variables; `playbook` is its builtin playbook, undefined for a custom action (or an
 * action that is none, refused for that).
 */
function checkExtraVars(
  vars: unknown,
  where: string,
  playbook: BuiltinPlaybook | undefined,
): string[] {
  if (vars === undefined) return [];
  if (typeof vars !== 'object' || vars === null || Array.isArray(vars)) {
    return [`${where} must be an object of variable names to values`];
  }
  const problems: string[] = [];
  const names = Object.keys(vars);
  for (const name of names) {
    if (!VAR_NAME.test(name)) {
      problems.push(`${where}: "${name}" is not a variable name (letters, digits and _)`);
    }
  }
  // Variable names pass the deny-list, then their action's allow-list (cluster-operation-vars.ts).
  const valid = names.filter((name) => VAR_NAME.test(name));
  problems.push(...varNameProblems(valid, playbook, where));
  const text = JSON.stringify(vars);
  if (text.length > MAX_EXTRA_VARS_BYTES) {
    problems.push(`${where} is ${text.length} bytes: at most ${MAX_EXTRA_VARS_BYTES}`);
  }
  const templated = strings(vars).find((s) => TEMPLATE.test(s));
  if (templated !== undefined) {
    problems.push(
      `${where}: "${templated.slice(0, 40)}" holds a template ({{, {% or {#), which ansible ` +
        'would run on the engine: give plain values',
    );
  }
  return problems;
}

/** Every string in a JSON value, keys included. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  return [];
}
