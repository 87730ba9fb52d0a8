// Moving a long-lived workflow to a new build (docs/deploy.md, "Upgrading and rolling back"). With
// Worker Versioning every run stays on the build it started on (PINNED), so a build never replays
// another build's history. A long-lived entity moves to the deployment's current build when it
// continues as new: at its history limit, or as soon as Temporal says the current build changed,
// which it sees at its next workflow task (the new build wakes it: shared/build-changed.ts).
import {
  deprecatePatch,
  makeContinueAsNewFunc,
  workflowInfo,
  type Workflow,
} from '@temporalio/workflow';

/** An entity continues as new, onto the current build, once another build became current. */
export const PATCH_MOVE_TO_NEW_BUILD = 'entity-moves-to-new-build';

/**
 * Whether the deployment's current build is no longer this run's: time to continue as new. Safe
 * in a condition: false (and no marker) until Temporal says so, which it never did for a run
 * recorded before Worker Versioning.
 */
export function newBuildCurrent(): boolean {
  const changed = workflowInfo().targetWorkerDeploymentVersionChanged;
  if (changed) deprecatePatch(PATCH_MOVE_TO_NEW_BUILD);
  return changed;
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
