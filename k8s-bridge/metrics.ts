// The bridge's Prometheus metrics: what it signalled, how much it remembers, and the
// ClusterOperations it sees.
import { Counter, Gauge, type Registry } from 'prom-client';

export interface BridgeMetrics {
  signals: Counter<'state' | 'result'>;
  indexSize: Gauge;
  relists: Counter;
  restarts: Counter;
}

export function createBridgeMetrics(registry: Registry, indexSize: () => number): BridgeMetrics {
  return {
    signals: new Counter({
      name: 'hostflow_bridge_signals_total',
      help: 'TaskRun observations sent to workflows, by observed state and result',
      labelNames: ['state', 'result'],
      registers: [registry],
    }),
    indexSize: new Gauge({
      name: 'hostflow_bridge_index_entries',
      help: 'TaskRuns under contract the bridge remembers (uid and last state only)',
      registers: [registry],
      collect() {
        this.set(indexSize());
      },
    }),
    relists: new Counter({
      name: 'hostflow_bridge_relists_total',
      help: 'Full TaskRun relists (start-up, resync, or after a watch expired)',
      registers: [registry],
    }),
    restarts: new Counter({
      name: 'hostflow_bridge_workflow_restarts_total',
      help: 'TaskRun workflows started again at a resync because their run had stopped while the TaskRun ran',
      registers: [registry],
    }),
  };
}

/**
 * ClusterOperations the bridge sees now, by phase and action, counted at each scrape
 * (cluster-operation-counts.ts): labels from closed lists only, so the series stay few.
 */
export function createClusterOperationsGauge(
  registry: Registry,
  counts: () => Iterable<[{ phase: string; action: string }, number]>,
): Gauge<'phase' | 'action'> {
  return new Gauge({
    name: 'hostflow_cluster_operations',
    help: 'ClusterOperations the bridge sees, by status phase (Pending before the engine wrote one) and action',
    labelNames: ['phase', 'action'],
    registers: [registry],
    collect() {
      this.reset(); // an `other` series no operation has any more goes, rather than keep its count
      for (const [labels, n] of counts()) this.set(labels, n);
    },
  });
}
