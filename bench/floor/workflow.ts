// The least a TaskRun's workflow can be (bench/temporal-floor.ts): started with a signal like a
// TaskRun's, served in its first workflow task, and ended by a second signal in its second one.
// No activity, no Kubernetes: what Temporal and the SDK cost before hostflow adds anything.
import { condition, defineSignal, proxySinks, setHandler, type Sinks } from '@temporalio/workflow';

export interface FloorSinks extends Sinks {
  bench: { served(): void; ended(): void };
}

export const observed = defineSignal<[{ state: 'active' | 'completed' }]>('observed');

export async function floorWorkflow(): Promise<void> {
  const { bench } = proxySinks<FloorSinks>();
  let completed = false;
  setHandler(observed, ({ state }) => {
    if (state === 'completed') completed = true;
  });
  bench.served();
  await condition(() => completed);
  bench.ended();
}
