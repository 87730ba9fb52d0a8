// The ClusterOperation resource (hostflow.dev/v1alpha1, deploy/crds/hostflow-cluster-operation.yaml):
// a day-2 action on the cluster a Provisioning in its namespace installed, after kubean's
// ClusterOperation. Its coordinates, its spec as hostflow reads it, and the check every spec
// passes before anything runs (pure, so the workflow and the tests share it).
export const CLUSTER_OPERATION_API = {
  group: 'hostflow.dev',
  version: 'v1alpha1',
  plural: 'clusteroperations',
} as const;

/**
 * kubespray's entry points an operation may run, as `actionSource: builtin`: those that converge
 * the cluster's nodes as its Provisioning holds them. (reset.yml and remove-node.yml change which
 * nodes it has: the Provisioning's spec does that.)
 */
export const BUILTIN_PLAYBOOKS = ['upgrade-cluster.yml', 'cluster.yml', 'scale.yml'] as const;
export type BuiltinPlaybook = (typeof BUILTIN_PLAYBOOKS)[number];

/** One step: the action itself, or a hook before or after it. */
export interface OperationStepSpec {
  /** A kubespray entry point (BUILTIN_PLAYBOOKS). */
  action?: string;
  actionType?: string;
  actionSource?: string;
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
}

/** A step as the workflow runs it, once checked. */
export interface OperationStep {
  /** `preHook[0]`, `action`, `postHook[1]`: where it is in the spec. */
  name: string;
  playbook: BuiltinPlaybook;
  extraVars: Record<string, unknown>;
  /** Post hooks only: also after a failure. */
  always: boolean;
}

/** Variables the engine sets itself, or that would change how ansible reaches the hosts. */
const RESERVED_VAR = /^(ansible_|skip_confirmation$|node$|hostflow_)/;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Jinja's delimiters: ansible renders them on the worker, so no value may carry one. */
const TEMPLATE = /\{\{|\{%|\{#/;
const MAX_EXTRA_VARS_BYTES = 16 * 1024;
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
    if (type !== 'playbook') {
      problems.push(`${name}.actionType "${type}" is not supported: use playbook`);
    }
    if (source !== 'builtin') {
      problems.push(`${name}.actionSource "${source}" is not supported: use builtin`);
    }
    const playbook = BUILTIN_PLAYBOOKS.find((p) => p === s.action);
    if (!playbook) {
      problems.push(
        `${name}.action ${s.action === undefined ? 'is missing' : `"${s.action}" is not one`}: ` +
          `use one of ${BUILTIN_PLAYBOOKS.join(', ')}`,
      );
    }
    problems.push(...checkExtraVars(s.extraVars, `${name}.extraVars`));
    if (problems.length > before || !playbook) return undefined;
    return { name, playbook, extraVars: s.extraVars ?? {}, always };
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
  if (problems.length) return { ok: false, problems };
  return {
    ok: true,
    steps: steps.map((s, i) => ({
      ...s!,
      name: i === pre.length ? 'action' : s!.name.replace(/^spec\./, ''),
    })),
  };
}

function checkExtraVars(vars: unknown, where: string): string[] {
  if (vars === undefined) return [];
  if (typeof vars !== 'object' || vars === null || Array.isArray(vars)) {
    return [`${where} must be an object of variable names to values`];
  }
  const problems: string[] = [];
  for (const name of Object.keys(vars)) {
    if (!VAR_NAME.test(name)) {
      problems.push(`${where}: "${name}" is not a variable name (letters, digits and _)`);
    } else if (RESERVED_VAR.test(name)) {
      problems.push(`${where}: ${name} is set by hostflow, not by an operation`);
    }
  }
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
