// The engine's own Prometheus metrics, emitted from workflows through the worker's runtime
// (exported on the worker's /metrics; never emitted during replay). Names live here only.
import { metricMeter } from '@temporalio/workflow';

export const metrics = {
  allocationWait: metricMeter.createHistogram(
    'hostflow_allocation_wait_seconds',
    'float',
    's',
    'Time a TaskRun waited for a host slot',
  ),
  provisioning: metricMeter.createHistogram(
    'hostflow_provisioning_seconds',
    'float',
    's',
    'Time to provision a build user and deliver its Secret',
  ),
  provisioningFailures: metricMeter.createCounter(
    'hostflow_provisioning_failures',
    '1',
    'Provisioning attempts that failed on a host',
  ),
  waits: metricMeter.createCounter(
    'hostflow_dependency_waits',
    '1',
    'Times a TaskRun or entity waited for a failing dependency (otp, kubernetes, cloud, worker)',
  ),
  orphanUsersCollected: metricMeter.createCounter(
    'hostflow_orphan_users_collected',
    '1',
    'Build users removed from static hosts because no running workflow owned them',
  ),
  orphanSecretsCollected: metricMeter.createCounter(
    'hostflow_orphan_secrets_collected',
    '1',
    'TaskRun Secrets deleted because their TaskRun was gone or finished and no workflow owned them',
  ),
  cleanupFailures: metricMeter.createCounter(
    'hostflow_cleanup_failures',
    '1',
    'Cleanup attempts that failed (and were retried)',
  ),
  slotsInUse: metricMeter.createGauge(
    'hostflow_slots_in_use',
    'int',
    '1',
    'Host slots held by TaskRuns',
  ),
  slotsTotal: metricMeter.createGauge(
    'hostflow_slots_total',
    'int',
    '1',
    'Host slots configured and healthy',
  ),
  queueLength: metricMeter.createGauge(
    'hostflow_queue_length',
    'int',
    '1',
    'TaskRuns waiting for a slot',
  ),
  poolVms: metricMeter.createGauge(
    'hostflow_pool_vms',
    'int',
    '1',
    'VMs of a dynamic pool, by phase (launching, booting, ready, retiring, terminating)',
  ),
  vmFailures: metricMeter.createCounter(
    'hostflow_vm_start_failures',
    '1',
    'Cloud VMs that failed to launch or never became reachable',
  ),
  orphansCollected: metricMeter.createCounter(
    'hostflow_orphan_vms_collected',
    '1',
    'Cloud VMs terminated by garbage collection because no running workflow owned them',
  ),
  rolloutNodes: metricMeter.createGauge(
    'hostflow_rollout_nodes',
    'int',
    '1',
    'Nodes of a MachineConfigPool by rollout state (updated, degraded, working, waiting)',
  ),
};
