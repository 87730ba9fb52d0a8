// From a new Machine to a Running one: wait for the bootstrap data (nothing is created before),
// take the infrastructure its HostflowMachine names, give the Machine its providerID and
// addresses, run the bootstrap data on the host, and wait for the Node with that providerID.
import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { SA } from '../../shared/search-attributes.js';
import { parseGoDuration } from '../../shared/go-duration.js';
import { CONDITION, REASON, type MachineFailureReason } from '../../shared/machine-api.js';
import { slotRequestId } from '../../shared/slot-requests.js';
import { forbiddenKindOf, innermostMessage } from '../../shared/failures.js';
import { machineBootstrap, machineApi } from './activity-proxies.js';
import { lookUntilDone } from '../kit/retry.js';
import { acquire, releaseInfrastructure, type MachineInfra } from './infrastructure.js';
import type { MachineRun } from './run.js';
import { checkMachineSpec } from './spec-check.js';

type Outcome = 'running' | 'failed' | 'deleting';
type PlatformNamed = { platform: string; nodeStartupMs: number } | { failed: string };

/**
 * v2: the Machine's providerID or its HostflowMachine's status refused with 403 (an admission
 * policy, a webhook) fails the Machine at once, reason `Forbidden`, and gives its host or VM
 * back; before, the refusal failed the workflow with the host still held.
 */
export const PATCH_FORBIDDEN_ANSWERED = 'machine-forbidden-answered';
const DEFAULT_NODE_STARTUP = '10m';

export async function provision(run: MachineRun): Promise<Outcome> {
  const { report } = run;
  const secretName = await bootstrapData(run);
  if (secretName === undefined) return 'deleting';

  const platform = await infrastructurePlatform(run);
  if (platform === undefined) return 'deleting';
  if ('failed' in platform) return failed(run, 'InvalidConfiguration', platform.failed);

  await run.unpaused();
  if (run.deleting()) return 'deleting';
  const planned = await planInfrastructure(run, platform.platform, secretName);
  if ('failed' in planned) return failed(run, 'InvalidConfiguration', planned.failed);
  const infra = (run.infra = planned);
  report.condition(CONDITION.infrastructureReady, 'False', REASON.waitingForInfrastructure);
  await report.publish(
    'Provisioning',
    `taking a ${infra.platform} ${infra.kind === 'dynamic' ? 'VM' : 'host'}`,
  );
  const acquired = await acquire(infra, run.mail, workflowInfo().workflowId, run.deleting);
  if ('stopped' in acquired) return 'deleting';
  if ('failed' in acquired) {
    report.condition(
      CONDITION.infrastructureReady,
      'False',
      REASON.infrastructureFailed,
      acquired.failed,
    );
    await report.event('Warning', 'FailedCreate', acquired.failed);
    const outcome = await failed(run, 'CreateError', acquired.failed);
    // Nothing is kept for a Machine that never got going: the VM goes, the slot is given back.
    await releaseInfrastructure(infra, (message) =>
      report.event('Warning', 'FailedTerminate', message),
    );
    return outcome;
  }
  const { providerID, addresses, host } = infra;
  upsertSearchAttributes([{ key: SA.providerId, value: providerID! }]);
  try {
    await machineApi.setMachineProviderId({ ref: run.ref, providerID: providerID! });
    await report.infrastructureReady(run.latest().spec.infrastructureRef!.name!, {
      ready: true,
      providerID,
      ...(infra.instanceId ? { instanceID: infra.instanceId } : {}),
      addresses,
    });
  } catch (err) {
    if (!forbiddenKindOf(err) || !patched(PATCH_FORBIDDEN_ANSWERED)) throw err;
    return refused(run, infra, innermostMessage(err));
  }
  report.condition(CONDITION.infrastructureReady, 'True');
  report.condition(CONDITION.nodeHealthy, 'False', REASON.waitingForNodeRef);
  await report.publish(
    'Provisioned',
    `${providerID} at ${host!.address}; running its bootstrap data`,
    {
      infrastructureReady: true,
      addresses,
    },
  );
  await report.event('Normal', 'Provisioned', `${providerID} at ${host!.address}`);

  await run.unpaused();
  if (run.deleting()) return 'deleting';
  try {
    const ran = await machineBootstrap.runBootstrapData.executeWithOptions(
      { summary: `Run the bootstrap data on ${host!.name} (${host!.address})` },
      [
        {
          namespace: run.ref.namespace,
          secretName,
          host: host!,
          env: {
            PROVIDER_ID: providerID!,
            MACHINE_NAME: run.ref.name,
            CLUSTER_NAME: run.latest().spec.clusterName ?? '',
          },
        },
      ],
    );
    await report.event(
      'Normal',
      'Bootstrapped',
      ran === 'ran'
        ? `bootstrap data ran on ${host!.name}`
        : `bootstrap data had already run on ${host!.name}`,
    );
  } catch (err) {
    const message = innermostMessage(err);
    report.condition(CONDITION.nodeHealthy, 'False', REASON.bootstrapFailed, message);
    await report.event('Warning', 'BootstrapFailed', message);
    return failed(run, 'CreateError', message);
  }
  return waitForNode(run, infra.providerID!);
}

/** Waits until the bootstrap Secret exists with its data; its name, or undefined when deleted. */
async function bootstrapData(run: MachineRun): Promise<string | undefined> {
  const { report } = run;
  return lookUntilDone<string | undefined>(async () => {
    await run.unpaused();
    if (run.deleting()) return { done: undefined };
    const spec = run.latest().spec;
    const secretName = spec.bootstrap?.dataSecretName;
    const state = secretName
      ? await machineApi.bootstrapDataState({ namespace: run.ref.namespace, name: secretName })
      : 'missing';
    if (secretName && state === 'ready') {
      report.condition(CONDITION.bootstrapReady, 'True');
      await report.publish('Pending', `bootstrap data found in Secret ${secretName}`, {
        bootstrapReady: true,
      });
      return { done: secretName };
    }
    const why = !secretName
      ? 'spec.bootstrap.dataSecretName is not set yet'
      : state === 'missing'
        ? `waiting for Secret ${secretName}`
        : `Secret ${secretName} has no key "value" yet`;
    report.condition(CONDITION.bootstrapReady, 'False', REASON.waitingForDataSecret, why);
    await report.publish('Pending', `${why}; nothing is created before it exists`, {
      bootstrapReady: false,
    });
    return { wakeWhen: changedOrDeleting(run) };
  }, 30_000);
}

/** The platform the HostflowMachine names, once it exists; undefined when deleted. */
async function infrastructurePlatform(run: MachineRun): Promise<PlatformNamed | undefined> {
  const { report } = run;
  return lookUntilDone<PlatformNamed | undefined>(async () => {
    if (run.deleting()) return { done: undefined };
    const spec = run.latest().spec;
    const problems = checkMachineSpec(spec);
    const lookup = problems.length
      ? { found: false as const, final: true, reason: problems.join('; ') }
      : await machineApi.readMachineInfrastructure({
          namespace: run.ref.namespace,
          ref: spec.infrastructureRef!,
          machine: run.ref,
        });
    if (lookup.found && lookup.spec.platform) {
      const startup = parseGoDuration(lookup.spec.nodeStartupTimeout ?? DEFAULT_NODE_STARTUP);
      if ('error' in startup)
        return { done: { failed: `${lookup.name} spec.nodeStartupTimeout: ${startup.error}` } };
      run.nodeStartupMs = startup.ms;
      return { done: { platform: lookup.spec.platform, nodeStartupMs: startup.ms } };
    }
    const reason = lookup.found ? `${lookup.name} names no spec.platform` : lookup.reason;
    if (lookup.found || lookup.final) return { done: { failed: reason } };
    report.condition(
      CONDITION.infrastructureReady,
      'False',
      REASON.waitingForInfrastructure,
      reason,
    );
    await report.publish('Pending', reason);
    return { wakeWhen: changedOrDeleting(run) };
  }, 30_000);
}

/** Ends a wait once the Machine's spec changes (a new generation) or it is being deleted. */
function changedOrDeleting(run: MachineRun): () => boolean {
  const generation = run.latest().generation;
  return () => run.deleting() || run.latest().generation !== generation;
}

/** How the platform serves a Machine: a static host, or a VM of its own. */
async function planInfrastructure(
  run: MachineRun,
  platform: string,
  secretName: string,
): Promise<MachineInfra | { failed: string }> {
  const { namespace, name, uid } = run.ref;
  const resolution = await machineApi.resolveTaskRunPlatform({ namespace, platform });
  if (resolution.kind === 'error') return { failed: resolution.message };
  if (resolution.kind !== 'static' && resolution.kind !== 'dynamic') {
    return {
      failed: `platform ${platform} is a ${resolution.kind === 'pool' ? 'dynamic-pool' : 'local'} platform: a Machine needs a dynamic platform (a VM of its own) or a static one (one of its hosts)`,
    };
  }
  const cluster = run.latest().spec.clusterName ?? '';
  return {
    platform,
    kind: resolution.kind,
    requestId: slotRequestId(workflowInfo().workflowId, uid),
    ...(resolution.kind === 'dynamic'
      ? { cloud: resolution.cloud, launchKey: `machine-${uid}` }
      : {}),
    tags: {
      ...(resolution.kind === 'dynamic' ? resolution.additionalTags : {}),
      MachineName: `${namespace}/${name}`,
      ...(cluster ? { [`kubernetes.io/cluster/${cluster}`]: 'owned' } : {}),
    },
    userDataSecret: { namespace, name: secretName },
  };
}

/** Waits for the Node with the Machine's providerID; after the startup timeout, says so and waits on. */
async function waitForNode(run: MachineRun, providerID: string): Promise<Outcome> {
  const { report } = run;
  const started = Date.now();
  let late = false;
  return lookUntilDone<Outcome>(async () => {
    if (run.deleting()) return { done: 'deleting' };
    const node = await machineApi.findNodeByProviderId({ providerID });
    if (node) {
      run.nodeName = node.name;
      report.condition(
        CONDITION.nodeHealthy,
        node.ready ? 'True' : 'False',
        node.ready ? undefined : REASON.nodeProvisioning,
      );
      report.condition(CONDITION.ready, 'True');
      await report.publish('Running', `Node ${node.name} joined`, {
        nodeRef: { apiVersion: 'v1', kind: 'Node', name: node.name },
      });
      await report.event(
        'Normal',
        'NodeJoined',
        `Node ${node.name} joined with providerID ${providerID}`,
      );
      return { done: 'running' };
    }
    const waited = Date.now() - started;
    if (!late && waited >= (run.nodeStartupMs ?? 0)) {
      late = true;
      const message = `no Node with spec.providerID ${providerID} joined within ${Math.round(waited / 1000)}s: check the bootstrap output on the host (/var/log/hostflow-bootstrap-output.log) and that it can reach the API server`;
      report.condition(CONDITION.nodeHealthy, 'False', REASON.nodeNotFound, message);
      await report.publish('Provisioned', message);
      await report.event('Warning', 'NodeStartupTimeout', message);
    }
    return { wakeWhen: run.deleting };
  }, 15_000);
}

/**
 * The API server refused a write for the Machine: said in its Ready condition and a Warning
 * Event, and nothing kept for it (no bootstrap data ran yet): the VM goes, the slot is given back.
 */
async function refused(run: MachineRun, infra: MachineInfra, cause: string): Promise<'failed'> {
  const { report } = run;
  const message =
    `${cause}: change the admission policy that refuses it, then delete the Machine ` +
    '(its MachineSet makes a new one)';
  report.condition(CONDITION.infrastructureReady, 'False', REASON.forbidden, message);
  await report.event('Warning', REASON.forbidden, message);
  const outcome = await failed(run, 'CreateError', message);
  await releaseInfrastructure(infra, (text) => report.event('Warning', 'FailedTerminate', text));
  return outcome;
}

async function failed(
  run: MachineRun,
  reason: MachineFailureReason,
  message: string,
): Promise<'failed'> {
  run.report.fail(reason, message);
  run.report.condition(CONDITION.ready, 'False', reason, message);
  await run.report.publish(
    run.report.phase ?? 'Pending',
    `failed: ${message}; delete the Machine to clean up`,
  );
  return 'failed';
}
