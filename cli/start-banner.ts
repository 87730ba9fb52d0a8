// What `hostflow start` prints once everything is up: where to look, and the README's tour with
// the paths of this checkout.
import { join } from 'node:path';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { DEMO_DYNAMIC_PLATFORM, DEMO_POOL_PLATFORM } from './demo-cloud.js';
import { DEMO_STATIC_PLATFORM } from './demo-hosts.js';
import { DEMO_POOL } from './demo-nodes.js';

export function printBanner(
  uiUrl: string,
  kubeconfig: string | undefined,
  logDir: string,
  engineNamespace: string,
  demoHosts: string[],
): void {
  const examples = join(REPO_ROOT, 'deploy/examples');
  const staticDemo = demoHosts.length
    ? `
Try a static-pool TaskRun (${DEMO_STATIC_PLATFORM} on the demo hosts ${demoHosts.join(', ')}):
  kubectl apply -f ${examples}/taskrun-static.yaml
  bash ${examples}/login.sh demo demo-static     # redeems the OTP like a build task, then logs in

Try cloud TaskRuns on the demo cloud (moto EC2; each instance boots into an sshd host):
  kubectl apply -f ${examples}/taskrun-dynamic.yaml   # ${DEMO_DYNAMIC_PLATFORM}: a VM of its own
  kubectl apply -f ${examples}/taskrun-pool.yaml      # ${DEMO_POOL_PLATFORM}: a slot on a shared VM
  bash ${examples}/login.sh demo demo-dynamic

Try a Provisioning on the demo hosts (registered as BareMetalHosts; kubespray's stand-in runs):
  kubectl apply -f ${examples}/provisioning.yaml && kubectl -n demo get bpa -w
  kubectl -n demo get secret cluster-demo-kubeconfig -o jsonpath='{.data.value}' | base64 -d
  kubectl apply -f ${examples}/cluster-operation.yaml && kubectl -n demo get clusterop -w   # once Ready: an upgrade
  kubectl -n demo delete bpa demo-cluster     # resets and releases the hosts
Or a Cluster: a Provisioning and a Software (packages per role) as one:
  kubectl apply -f ${examples}/cluster.yaml && kubectl -n demo get cl -w

Try an OS image rollout over the demo pool ${DEMO_POOL} (three Nodes; rpm-ostree and reboots stand in):
  kubectl apply -f ${examples}/rollout.yaml && kubectl get mcp -w
  kubectl delete mc 99-demo-worker-os-image            # reverts the pool to its base image

Try a MachineDeployment of HostflowMachines under Cluster API core, on the demo cloud
(no kubelet there: node-join.sh plays its part):
  kubectl apply -f ${examples}/machine-deployment.yaml && kubectl -n demo get ma -w
  bash ${examples}/node-join.sh demo --all            # once they are Provisioned
  kubectl -n demo scale md demo-machines --replicas=1  # Cluster API core drains; hostflow terminates
`
    : '';
  console.log(`
hostflow is running.
  Temporal UI:  ${uiUrl}
  kubeconfig:   ${kubeconfig ?? '(default)'}
  host-config:  kubectl -n ${engineNamespace} edit configmap ${HOST_CONFIG_NAME}
  logs:         ${logDir}

Try a local-platform TaskRun:
  export KUBECONFIG=${kubeconfig ?? '~/.kube/config'}
  kubectl apply -f ${examples}/taskrun-local.yaml
  kubectl -n demo get secret multi-platform-ssh-demo-local -o jsonpath='{.data.host}' | base64 -d
${staticDemo}
Ctrl-C stops everything hostflow started.`);
}
