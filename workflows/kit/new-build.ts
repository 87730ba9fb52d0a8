// Moving a long-lived workflow to a new build (docs/deploy.md, "Upgrading and rolling back"). With
// Worker Versioning every run stays on the build it started on (PINNED), so a build never replays
// another build's history. A long-lived entity moves to the deployment's current build when it
// continues as new: at its history limit, or as soon as Temporal says the current build changed,
// which it sees at its next workflow task (the new build wakes it: shared/build-changed.ts).
import { makeContinueAsNewFunc, workflowInfo, type Workflow } from '@temporalio/workflow';

/**
 * Whether the deployment's current build is no longer this run's: time to continue as new. Safe
 * in a condition: false until Temporal says so, which it never does without Worker Versioning.
 */
export function newBuildCurrent(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged;
}

/**
 * Continues as new; a run on a deployment version starts its next run on the current build
 * (AUTO_UPGRADE for its first task, then pinned there). A run without one continues as it is.
 */
export function continueAsNewOnCurrentBuild<F extends Workflow>(
  ...args: Parameters<F>
): Promise<never> {
  const versioned = workflowInfo().currentDeploymentVersion !== undefined;
  return makeContinueAsNewFunc<F>(
    versioned ? { initialVersioningBehavior: 'AUTO_UPGRADE' } : undefined,
  )(...args);
}
