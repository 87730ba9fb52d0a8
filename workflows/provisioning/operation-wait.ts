// Why the ClusterOperations queued on a Provisioning cannot start yet, in words for their status:
// the cluster is not installed, the Provisioning's own change runs first, it failed or was
// refused and waits for on-call, or its maintenance window is shut (and opens when). Pure.
import {
  describeWindow,
  windowState,
  type MaintenanceWindowSpec,
} from '../../shared/maintenance-window.js';

export interface OperationWait {
  why: string;
  /** The window opens then (ms): wake up to start the first in line. */
  opensAt?: number;
}

export interface ProvisioningNow {
  name: string;
  installed: boolean;
  /** The spec change it is carrying out (its phase), if it is at one. */
  changing?: string;
  /** The step that failed and waits for on-call, or `refused`. */
  stuck?: string;
  window?: MaintenanceWindowSpec;
  now: number;
}

/** Why the first in line cannot start now; undefined when it may. */
export function operationWait(p: ProvisioningNow): OperationWait | undefined {
  const provisioning = `Provisioning ${p.name}`;
  if (p.changing) return { why: `${provisioning} is carrying out its spec (${p.changing}) first` };
  if (!p.installed) return { why: `the cluster of ${provisioning} is not installed yet` };
  if (p.stuck === 'refused') {
    return { why: `${provisioning}'s spec was refused: fix it (kubectl describe provisioning)` };
  }
  if (p.stuck) {
    return {
      why:
        `${provisioning} failed at "${p.stuck}": retry it (annotation hostflow.dev/retry) or ` +
        'change its spec',
    };
  }
  if (!p.window) return undefined;
  const state = windowState(p.window, p.now);
  if ('problems' in state) return { why: `${provisioning}: ${state.problems.join('; ')}` };
  if (state.open) return undefined;
  return {
    why:
      `the maintenance window of ${provisioning} (${describeWindow(p.window)}) opens at ` +
      new Date(state.opensAt).toISOString(),
    opensAt: state.opensAt,
  };
}
