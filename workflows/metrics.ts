// The engine's own Prometheus metrics, emitted from workflows through the worker's runtime
// (exported on the worker's /metrics; never emitted during replay). Names live here only.
//
// Each metric is made when it is emitted, not when the module loads: the workflow modules are
// loaded once per worker thread and shared by every workflow (workers/workflow-code.ts), and the
// SDK's meter can only be used inside a workflow.
import type { MetricTags, NumericMetricValueType } from '@temporalio/common';
import { metricMeter } from '@temporalio/workflow';

function histogram(
  name: string,
  valueType: NumericMetricValueType,
  unit: string,
  description: string,
) {
  return {
    record: (value: number, tags?: MetricTags) =>
      metricMeter.createHistogram(name, valueType, unit, description).record(value, tags),
  };
}

function counter(name: string, unit: string, description: string) {
  return {
    add: (value: number, tags?: MetricTags) =>
      metricMeter.createCounter(name, unit, description).add(value, tags),
  };
}

function gauge(name: string, valueType: NumericMetricValueType, unit: string, description: string) {
  return {
    set: (value: number, tags?: MetricTags) =>
      metricMeter.createGauge(name, valueType, unit, description).set(value, tags),
  };
}

export const metrics = {
  allocationWait: histogram(
    'hostflow_allocation_wait_seconds',
    'float',
    's',
    'Time a TaskRun waited for a host slot',
  ),
  provisioning: histogram(
    'hostflow_provisioning_seconds',
    'float',
    's',
    'Time to provision a build user and deliver its Secret',
  ),
  provisioningFailures: counter(
    'hostflow_provisioning_failures',
    '1',
    'Provisioning attempts that failed on a host',
  ),
  waits: counter(
    'hostflow_dependency_waits',
    '1',
    'Times a TaskRun or entity waited for a failing dependency (otp, kubernetes, cloud, worker)',
  ),
  orphanUsersCollected: counter(
    'hostflow_orphan_users_collected',
    '1',
    'Build users removed from static hosts because no running workflow owned them',
  ),
  orphanSecretsCollected: counter(
    'hostflow_orphan_secrets_collected',
    '1',
    'TaskRun Secrets deleted because their TaskRun was gone or finished and no workflow owned them',
  ),
  cleanupFailures: counter(
    'hostflow_cleanup_failures',
    '1',
    'Cleanup attempts that failed (and were retried)',
  ),
  slotsInUse: gauge('hostflow_slots_in_use', 'int', '1', 'Host slots held by TaskRuns'),
  slotsTotal: gauge('hostflow_slots_total', 'int', '1', 'Host slots configured and healthy'),
  queueLength: gauge('hostflow_queue_length', 'int', '1', 'TaskRuns waiting for a slot'),
  poolVms: gauge(
    'hostflow_pool_vms',
    'int',
    '1',
    'VMs of a dynamic pool, by phase (launching, booting, ready, retiring, terminating)',
  ),
  vmFailures: counter(
    'hostflow_vm_start_failures',
    '1',
    'Cloud VMs that failed to launch or never became reachable',
  ),
  orphansCollected: counter(
    'hostflow_orphan_vms_collected',
    '1',
    'Cloud VMs terminated by garbage collection because no running workflow owned them',
  ),
  rolloutNodes: gauge(
    'hostflow_rollout_nodes',
    'int',
    '1',
    'Nodes of a MachineConfigPool by rollout state (updated, degraded, working, waiting)',
  ),
};
