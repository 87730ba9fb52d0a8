// What about a TaskRun itself could make delivery fail (docs/architecture.md, "Inputs that could
// make delivery fail": they are checked before a slot or VM is taken). Pure: the workflow runs it
// before it asks for anything, so a TaskRun can never cost a host its health for its own input.
import { SECRET_PREFIX, secretNameFor } from './contract.js';

/** A Kubernetes object name (DNS subdomain) is at most this long. */
const MAX_NAME = 253;

export type TaskRunInputCheck =
  | { ok: true }
  /** `answerable` is false when not even an `error` Secret can be written for it. */
  | { ok: false; reason: string; answerable: boolean };

export function checkTaskRunInput(taskRun: { namespace: string; name: string }): TaskRunInputCheck {
  const secret = secretNameFor(taskRun.name);
  if (secret.length > MAX_NAME) {
    return {
      ok: false,
      answerable: false,
      reason:
        `the TaskRun's name is ${taskRun.name.length} characters long, so the Secret it mounts ` +
        `(${SECRET_PREFIX}<name>) would have ${secret.length}, more than the ${MAX_NAME} ` +
        'Kubernetes allows: no Secret can be written for it. Give the TaskRun a name of at most ' +
        `${MAX_NAME - SECRET_PREFIX.length} characters`,
    };
  }
  return { ok: true };
}
