// Carrying out a plan (plans.ts), one step after the other: each step says where it is (status,
// details), the last one says the cluster is Ready and what changed, and a step that fails says
// why and leaves the plan resumable from that step once on-call has fixed the cause.
import { isCancellation, log } from '@temporalio/workflow';
import { RETRY_ANNOTATION } from '../../shared/bpa-api.js';
import { forbiddenKindOf, innermostMessage } from '../../shared/failures.js';
import { failureDetails } from '../kit/playbook-failure.js';
import { installerKey, provisioningApi } from './activity-proxies.js';
import { letGo } from './host-hold.js';
import { runPlaybook } from './kubespray.js';
import { ipMap, nodeSummary } from './nodes.js';
import { unionNodes, withoutNodes, type Plan, type PlanStep } from './plans.js';
import type { Provisioner } from './provisioner.js';

const FORBIDDEN_ADVICE =
  "Free the namespace's ResourceQuota or change the admission policy that refuses it, then " +
  `set the annotation ${RETRY_ANNOTATION} to resume`;

/** Carries out `plan` from step `from`; the index of the step that failed, if one did. */
export async function carryOut(
  provisioner: Provisioner,
  plan: Plan,
  from: number,
  goOn: () => boolean,
): Promise<number | undefined> {
  for (let index = from; index < plan.steps.length; index++) {
    if (!goOn()) return undefined; // being deleted: what was done is undone there
    const step = plan.steps[index]!;
    await provisioner.report.step(plan.phase, step.what, {
      ...(index === from ? nodeSummary(plan.nodes) : {}),
      failedStep: null,
    });
    try {
      await runStep(provisioner, plan, step);
    } catch (err) {
      if (isCancellation(err)) throw err;
      await failed(provisioner, step, err);
      return index;
    }
  }
  return undefined;
}

async function runStep(provisioner: Provisioner, plan: Plan, step: PlanStep): Promise<void> {
  const { ref } = provisioner;
  const { namespace } = ref;
  const cluster = provisioner.cluster;
  const labels = step.nodes.map((node) => node.label);
  switch (step.kind) {
    case 'reset.yml':
      await runPlaybook(provisioner, 'reset.yml', step.nodes, plan);
      return letGo(provisioner, step.nodes);
    case 'key': {
      const keySecret = await installerKey.ensureInstallerKey({ namespace, cluster, owner: ref });
      const hosts = plan.keyHosts.filter((host) => labels.includes(host.label));
      // Recorded before any host is given it, so a step that fails half-way is taken back too.
      const publicKey = await installerKey.installerPublicKey({ namespace, keySecret });
      if (!provisioner.installerKeys.includes(publicKey)) provisioner.installerKeys.push(publicKey);
      await installerKey.authorizeInstallerKey({ namespace, keySecret, hosts, publicKey });
      return;
    }
    case 'cluster.yml': {
      provisioner.touched = unionNodes(provisioner.touched, step.nodes);
      const outcome = await runPlaybook(provisioner, 'cluster.yml', step.nodes, plan);
      provisioner.kubeconfigSecret = outcome.kubeconfigSecret;
      return;
    }
    case 'remove-node.yml': {
      const before = provisioner.installed!.nodes;
      await runPlaybook(provisioner, 'remove-node.yml', before, plan, labels);
      provisioner.installed!.nodes = withoutNodes(before, step.nodes);
      return letGo(provisioner, step.nodes);
    }
    case 'scale.yml':
      provisioner.touched = unionNodes(provisioner.touched, step.nodes);
      await runPlaybook(provisioner, 'scale.yml', plan.nodes, plan, labels);
      return;
    case 'outputs':
      await provisioningApi.writeClusterIpMap({
        namespace,
        cluster,
        data: ipMap(plan.nodes),
        owner: ref,
      });
      return done(provisioner, plan);
  }
}

/** The plan's last step ran: the cluster is Ready, as installed or scaled (or unchanged). */
async function done(provisioner: Provisioner, plan: Plan): Promise<void> {
  const { report, cluster } = provisioner;
  const first = !provisioner.installed;
  const { podSubnet, plugins } = plan;
  provisioner.installed = {
    cluster,
    nodes: plan.nodes,
    plugins,
    ...(podSubnet ? { podSubnet } : {}),
    ...(plan.kubesprayRelease ? { kubesprayRelease: plan.kubesprayRelease } : {}),
  };
  const unchanged = !first && !plan.added.length && !plan.removed.length;
  const reason = first ? 'Installed' : unchanged ? 'Unchanged' : 'Scaled';
  const what = first
    ? `cluster ${cluster} is installed; kubeconfig in Secret ${provisioner.kubeconfigSecret}`
    : `cluster ${cluster} has ${nodeCount(plan.nodes.length)}` +
      (unchanged ? ': the spec asks for the nodes it has; no playbook ran' : '') +
      (plan.added.length ? `; added ${plan.added.join(', ')}` : '') +
      (plan.removed.length ? `; removed ${plan.removed.join(', ')}` : '');
  await report.step('Ready', reason, {
    ...report.ready('True', reason, what),
    install: { ...provisioner.lastRun, failedHost: null, failedTask: null },
    ...nodeSummary(plan.nodes),
    ...(provisioner.kubeconfigSecret ? { kubeconfigSecret: provisioner.kubeconfigSecret } : {}),
  });
  await report.event('Normal', first ? 'Provisioned' : reason, what);
}

/** A step failed: says which, and why, and how to resume there. */
async function failed(provisioner: Provisioner, step: PlanStep, err: unknown): Promise<void> {
  const { report } = provisioner;
  const cause = innermostMessage(err);
  // A kubespray failure names its playbook, host and task; any other says which step it was.
  let message = step.kind.endsWith('.yml') ? cause : `${step.what}: ${cause}`;
  let reason = provisioner.installed ? 'ScaleFailed' : 'InstallFailed';
  if (forbiddenKindOf(err)) {
    // The API server refused what it writes next to the cluster: the tenant's to fix.
    reason = 'Forbidden';
    message = `${step.what}: ${cause}. ${FORBIDDEN_ADVICE}`;
  }
  log.warn('provisioning step failed', {
    cluster: provisioner.cluster,
    step: step.what,
    error: cause,
  });
  await report.step(
    'Failed',
    `${step.what} failed: fix the cause, then set the annotation ${RETRY_ANNOTATION} to resume here`,
    {
      ...report.ready('False', reason, message),
      failedStep: step.what,
      ...(step.kind.endsWith('.yml')
        ? {
            install: {
              playbook: step.kind,
              failedHost: null,
              failedTask: null,
              ...failureDetails(err),
            },
          }
        : {}),
    },
  );
  await report.event('Warning', reason, message);
}

/** `n nodes`, or `1 node`: a cluster can be scaled down to its one master. */
function nodeCount(n: number): string {
  if (n !== 1) return `${n} nodes`;
  return '1 node';
}
