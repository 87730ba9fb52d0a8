// A HostflowMachine deleted (Cluster API core deletes it once its Machine has drained and its
// Node is gone) gives back what it holds, each step resumable after a crash: a static host's
// bootstrap sentinel is removed so its next machine is bootstrapped afresh, the VM is terminated
// until the cloud confirms it, the slot is given back, and only then its finalizer goes.
import { CONDITION, REASON } from '../../shared/machine-api.js';
import { innermostMessage } from '../../shared/failures.js';
import { machineBootstrap, machineApi } from './activity-proxies.js';
import { releaseInfrastructure } from './infrastructure.js';
import type { MachineRun } from './run.js';

export async function release(run: MachineRun): Promise<void> {
  const { report, infra } = run;
  await run.unpaused();
  report.condition(CONDITION.ready, 'False', REASON.deleting, 'giving back its VM or host');
  await report.publish('Deleting', 'giving back its VM or host');
  if (infra) {
    if (infra.kind === 'static' && infra.host && infra.granted) {
      await machineBootstrap
        .forgetBootstrap({ host: infra.host })
        .catch((err: unknown) =>
          report.event(
            'Warning',
            'BootstrapNotForgotten',
            `${infra.host!.name}: ${innermostMessage(err)}`,
          ),
        );
    }
    await releaseInfrastructure(infra, (message, waitMs) =>
      report.event(
        'Warning',
        'FailedTerminate',
        `${message}; trying again in ${waitMs / 1000}s`,
        `terminate-${waitMs}`,
      ),
    );
    await report.event(
      'Normal',
      infra.kind === 'dynamic' ? 'Terminated' : 'HostReleased',
      infra.kind === 'dynamic'
        ? `VM ${infra.instanceId ?? '(never launched)'} is terminated`
        : `host ${infra.host?.name ?? '(never granted)'} is given back`,
    );
  }
  await machineApi.removeHostflowMachineFinalizer(run.ref);
}
