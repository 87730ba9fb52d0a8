// The first Provisioning workflow, kept as it was for the runs it started: they replay and go
// on with this code (test/histories/provisioning-*.json). New runs take provisioning.ts, which
// scales, retries and locks (its patch). Changing this file breaks those runs: do not.
import { condition, log, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  provisioningObserved,
  type ProvisioningObservation,
  type ProvisioningInput,
} from '../../shared/contracts/provisioning.js';
import type { PlaybookOutcome } from '../../activities/ansible/playbook.js';
import { innermostMessage } from '../../shared/failures.js';
import { installerKey, kubespray, provisioningApi } from './activity-proxies.js';
import { inventoryOf } from '../../shared/inventory.js';
import { renderGroupVars } from './inventory.js';
import { ipMap, nodeAddresses, nodeSummary, type ProvisioningNode } from './nodes.js';
import { failureDetails, ProvisioningReport } from './report.js';
import { assignRoles } from './roles.js';

export async function provisioningBeforePlans({
  namespace,
  name,
}: ProvisioningInput): Promise<void> {
  let latest: ProvisioningObservation | undefined;
  setHandler(provisioningObserved, (seen) => {
    if (!latest || seen.deleting || seen.generation > latest.generation) latest = seen;
  });
  await condition(() => latest !== undefined);
  const ref = { namespace, name, uid: latest!.uid };
  const consumer = `${namespace}/${name}`;
  let handled = 0;
  let claimed = false;
  let cluster = latest!.cluster ?? '';
  /** The nodes of the last install started: what a delete resets. */
  let nodes: ProvisioningNode[] = [];
  let installed = false;

  const report = new ProvisioningReport(ref, () => ({
    cluster,
    generation: handled,
    eventScope: String(handled),
  }));
  const step = report.step.bind(report);
  const event = report.event.bind(report);
  const ready = report.ready.bind(report);
  const refuse = report.refuse.bind(report);

  for (;;) {
    await condition(() => latest!.deleting || latest!.generation !== handled);
    const seen = latest!;
    if (seen.deleting) break;
    handled = seen.generation;
    if (installed) {
      // Installed once: changing the nodes of a live cluster (scale.yml, remove-node.yml) is
      // not applied yet; say so rather than reinstall over it.
      await step('Ready', 'The cluster runs as first installed', {
        ...ready(
          'True',
          'SpecChangeNotApplied',
          'changes to the nodes of an installed cluster are not applied yet',
        ),
      });
      continue;
    }
    cluster = seen.cluster ?? '';
    if (!(await provisioningApi.addProvisioningFinalizer(ref))) return; // gone before we began

    await step('Assigning', 'Assign roles from the BareMetalHosts');
    if (!cluster) {
      await refuse(['the label `cluster` is missing: it names the cluster to build']);
      continue;
    }
    const hosts = await provisioningApi.listBareMetalHosts();
    const assignment = assignRoles(seen.spec, consumer, hosts);
    if (!assignment.ok) {
      await refuse(assignment.problems);
      continue;
    }
    const found = await nodeAddresses(assignment.nodes, hosts, seen.ipSource);
    if ('problems' in found) {
      await refuse(found.problems);
      continue;
    }
    await provisioningApi.claimBareMetalHosts({
      consumer: ref,
      hosts: assignment.nodes.map((node) => node.host),
    });
    claimed = true;
    nodes = found.nodes;
    const summary = nodeSummary(nodes);

    await step('Installing', 'Hand out the installer key', summary);
    const keySecret = await installerKey.ensureInstallerKey({ namespace, cluster, owner: ref });
    await installerKey.authorizeInstallerKey({
      namespace,
      keySecret,
      hosts: found.keyHosts,
    });

    await step('Installing', 'Run kubespray cluster.yml');
    let outcome: PlaybookOutcome;
    try {
      outcome = await kubespray.runPlaybook.executeWithOptions(
        { summary: `kubespray cluster.yml for cluster ${cluster}` },
        [
          {
            namespace,
            cluster,
            playbook: 'cluster.yml',
            inventory: inventoryOf(nodes),
            groupVars: renderGroupVars({
              cluster,
              podSubnet: seen.spec.PodSubnet,
              plugins: seen.spec.KUDPlugins,
            }),
            sshUser: 'root',
            sshKeySecret: keySecret,
            owner: ref,
            controlPlaneIp: nodes.find((n) => n.roles.includes('master'))!.ip,
          },
        ],
      );
    } catch (err) {
      // Only kubespray's own failure is blamed here; the hosts stay assigned for a retry.
      const message = innermostMessage(err);
      log.warn('kubespray failed', { cluster, error: message });
      await step('Failed', 'kubespray cluster.yml failed: the hosts stay assigned', {
        ...ready('False', 'InstallFailed', message),
        install: { playbook: 'cluster.yml', ...failureDetails(err) },
      });
      await event('Warning', 'InstallFailed', message); // a changed spec tries again
      continue;
    }
    await provisioningApi.writeClusterIpMap({ namespace, cluster, data: ipMap(nodes), owner: ref });
    installed = true;
    await step('Ready', 'Installed', {
      ...ready('True', 'Installed', `cluster ${cluster} is installed`),
      install: { playbook: 'cluster.yml', log: outcome.log },
      kubeconfigSecret: outcome.kubeconfigSecret,
    });
    await event(
      'Normal',
      'Provisioned',
      `cluster ${cluster} is installed; kubeconfig in Secret ${outcome.kubeconfigSecret}`,
    );
  }

  // Deleting: reset what was installed, free the hosts, remove what was created.
  await step('Deleting', 'Reset the hosts and release them');
  if (claimed && nodes.length > 0) {
    try {
      await kubespray.runPlaybook.executeWithOptions(
        { summary: `kubespray reset.yml for cluster ${cluster}` },
        [
          {
            namespace,
            cluster,
            playbook: 'reset.yml',
            inventory: inventoryOf(nodes),
            groupVars: renderGroupVars({ cluster }),
            sshUser: 'root',
            sshKeySecret: `${cluster}-ssh-key`,
          },
        ],
      );
    } catch (err) {
      // A host that is gone cannot be reset; it is released all the same.
      await event('Warning', 'ResetFailed', innermostMessage(err));
    }
  }
  await provisioningApi.releaseBareMetalHosts({ consumer: ref });
  if (cluster) await provisioningApi.deleteClusterOutputs({ namespace, cluster, owner: ref });
  await provisioningApi.removeProvisioningFinalizer(ref);
  setCurrentDetails(`**${consumer}**: deleted; hosts released (${workflowInfo().workflowId}).`);
}
