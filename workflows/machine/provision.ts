// From a new HostflowMachine to a provisioned one, as a Cluster API infrastructure provider does
// it: wait until a Machine owns it and that Machine's bootstrap data exists (nothing is taken
// before), take the VM or host its platform names, set spec.providerID, run the bootstrap data on
// the host over SSH (these clouds have no cloud-init), and say it is provisioned, with its
// addresses and failure domain. Cluster API core does the rest of the Machine's life.
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { SA } from '../../shared/search-attributes.js';
import { REASON, CONDITION } from '../../shared/machine-api.js';
import { slotRequestId } from '../../shared/slot-requests.js';
import { forbiddenKindOf, innermostMessage } from '../../shared/failures.js';
import { machineBootstrap, machineApi } from './activity-proxies.js';
import { lookUntilDone } from '../kit/retry.js';
import { acquire, releaseInfrastructure, type MachineInfra } from './infrastructure.js';
import type { MachineRun, OwnerInfo } from './run.js';

type Outcome = 'provisioned' | 'failed' | 'deleting';

export async function provision(run: MachineRun): Promise<Outcome> {
  const { report } = run;
  const owner = await ownerWithBootstrapData(run);
  if (owner === undefined) return 'deleting';
  run.owner = owner;
  if (owner.clusterName) report.about(owner.clusterName);

  await run.unpaused();
  if (run.deleting()) return 'deleting';
  const planned = await planInfrastructure(run, owner);
  if ('failed' in planned) return failed(run, REASON.invalidConfiguration, planned.failed);
  const infra = (run.infra = planned);
  report.condition(CONDITION.ready, 'False', REASON.waitingForHost);
  await report.publish(
    'Provisioning',
    `taking a ${infra.platform} ${infra.kind === 'dynamic' ? 'VM' : 'host'}`,
  );
  const acquired = await acquire(infra, run.mail, workflowInfo().workflowId, run.deleting);
  if ('stopped' in acquired) return 'deleting';
  if ('failed' in acquired) {
    await report.event('Warning', 'FailedCreate', acquired.failed);
    const outcome = await failed(run, REASON.infrastructureFailed, acquired.failed);
    // Nothing is kept for a machine that never got going: the VM goes, the slot is given back.
    await releaseInfrastructure(infra, (message) =>
      report.event('Warning', 'FailedTerminate', message),
    );
    return outcome;
  }
  const { providerID, host } = infra;
  upsertSearchAttributes([{ key: SA.providerId, value: providerID! }]);
  try {
    await machineApi.setHostflowMachineProviderId({ ref: run.ref, providerID: providerID! });
  } catch (err) {
    if (!forbiddenKindOf(err)) throw err;
    return refused(run, infra, innermostMessage(err));
  }
  report.condition(CONDITION.ready, 'False', REASON.provisioning, 'running its bootstrap data');
  await report.publish(
    'Provisioning',
    `${providerID} at ${host!.address}; running its bootstrap data`,
  );
  await report.event('Normal', 'InstanceCreated', `${providerID} at ${host!.address}`);

  await run.unpaused();
  if (run.deleting()) return 'deleting';
  try {
    const ran = await machineBootstrap.runBootstrapData.executeWithOptions(
      { summary: `Run the bootstrap data on ${host!.name} (${host!.address})` },
      [
        {
          namespace: run.ref.namespace,
          secretName: owner.dataSecretName,
          host: host!,
          env: {
            PROVIDER_ID: providerID!,
            MACHINE_NAME: owner.machineName,
            CLUSTER_NAME: owner.clusterName,
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
    await report.event('Warning', 'BootstrapFailed', message);
    return failed(run, REASON.bootstrapFailed, message);
  }
  report.condition(CONDITION.ready, 'True', REASON.ready);
  await report.publish('Provisioned', `${providerID} at ${host!.address}`, {
    initialization: { provisioned: true },
    addresses: infra.addresses ?? [],
    ...(infra.zone ? { failureDomain: infra.zone } : {}),
    ...(infra.instanceId ? { instanceID: infra.instanceId } : {}),
  });
  return 'provisioned';
}

/**
 * Waits until a Machine owns the HostflowMachine and that Machine's bootstrap Secret has its
 * data; what the Machine says, or undefined when the HostflowMachine is deleted meanwhile.
 */
async function ownerWithBootstrapData(run: MachineRun): Promise<OwnerInfo | undefined> {
  const { report } = run;
  const waiting = async (reason: string, why: string) => {
    report.condition(CONDITION.ready, 'False', reason, why);
    await report.publish('Pending', `${why}; nothing is taken before`);
    return { wakeWhen: changedOrDeleting(run) };
  };
  return lookUntilDone<OwnerInfo | undefined>(async () => {
    if (run.deleting()) return { done: undefined };
    const owner = run.latest().owner;
    if (!owner)
      return waiting(
        REASON.waitingForOwner,
        'waiting for a Machine to own it (Cluster API core sets its controller ownerReference)',
      );
    const machine = await machineApi.readOwnerMachine({
      namespace: run.ref.namespace,
      hostflowMachine: run.ref.name,
      owner,
    });
    if (!machine.found) return waiting(REASON.waitingForOwner, machine.reason);
    const secretName = machine.dataSecretName;
    const state = secretName
      ? await machineApi.bootstrapDataState({ namespace: run.ref.namespace, name: secretName })
      : 'missing';
    if (secretName && state === 'ready') {
      return {
        done: {
          machineName: owner.name,
          machineUid: owner.uid,
          clusterName: machine.clusterName,
          dataSecretName: secretName,
        },
      };
    }
    return waiting(
      REASON.waitingForBootstrapData,
      !secretName
        ? `Machine ${owner.name} has no spec.bootstrap.dataSecretName yet`
        : state === 'missing'
          ? `waiting for Secret ${secretName}`
          : `Secret ${secretName} has no key "value" yet`,
    );
  }, 15_000);
}

/** Ends a wait once the HostflowMachine changes (a new generation or owner) or is deleted. */
function changedOrDeleting(run: MachineRun): () => boolean {
  const { generation, owner } = run.latest();
  return () =>
    run.deleting() ||
    run.latest().generation !== generation ||
    run.latest().owner?.uid !== owner?.uid;
}

/** How the platform serves the machine: a static host, or a VM of its own. */
async function planInfrastructure(
  run: MachineRun,
  owner: OwnerInfo,
): Promise<MachineInfra | { failed: string }> {
  const { namespace, uid } = run.ref;
  const platform = run.latest().spec.platform ?? '';
  if (!platform) return { failed: 'spec.platform is not set: name a platform of host-config' };
  const resolution = await machineApi.resolveTaskRunPlatform({ namespace, platform });
  if (resolution.kind === 'error') return { failed: resolution.message };
  if (resolution.kind !== 'static' && resolution.kind !== 'dynamic') {
    return {
      failed: `platform ${platform} is a ${resolution.kind === 'pool' ? 'dynamic-pool' : 'local'} platform: a HostflowMachine needs a dynamic platform (a VM of its own) or a static one (one of its hosts)`,
    };
  }
  const cluster = owner.clusterName;
  return {
    platform,
    kind: resolution.kind,
    requestId: slotRequestId(workflowInfo().workflowId, uid),
    // Keyed by the Machine: one VM per Machine, whatever happens to workers.
    ...(resolution.kind === 'dynamic'
      ? { cloud: resolution.cloud, launchKey: `machine-${owner.machineUid}` }
      : {}),
    tags: {
      ...(resolution.kind === 'dynamic' ? resolution.additionalTags : {}),
      MachineName: `${namespace}/${owner.machineName}`,
      ...(cluster ? { [`kubernetes.io/cluster/${cluster}`]: 'owned' } : {}),
    },
    userDataSecret: { namespace, name: owner.dataSecretName },
  };
}

/**
 * The API server refused a write for it: said in its Ready condition and a Warning Event, and
 * nothing kept for it (no bootstrap data ran yet): the VM goes, the slot is given back.
 */
async function refused(run: MachineRun, infra: MachineInfra, cause: string): Promise<'failed'> {
  const message =
    `${cause}: change the admission policy that refuses it; a MachineHealthCheck or a person ` +
    'deleting the Machine replaces it';
  await run.report.event('Warning', REASON.forbidden, message);
  const outcome = await failed(run, REASON.forbidden, message);
  await releaseInfrastructure(infra, (text) =>
    run.report.event('Warning', 'FailedTerminate', text),
  );
  return outcome;
}

async function failed(run: MachineRun, reason: string, message: string): Promise<'failed'> {
  run.report.condition(CONDITION.ready, 'False', reason, message);
  await run.report.publish('Failed', `failed: ${message}; delete its Machine to clean up`);
  return 'failed';
}
