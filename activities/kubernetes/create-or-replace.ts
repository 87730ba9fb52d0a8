// Writing an object the engine owns whole (a kubeconfig Secret, an IP ConfigMap): created, or
// replaced when it already exists, with a failure named after the object.
import { isConflict, rethrowKube } from './errors.js';

export async function createOrReplace(
  what: string,
  create: () => Promise<unknown>,
  replace: () => Promise<unknown>,
): Promise<void> {
  try {
    try {
      await create();
    } catch (err) {
      if (!isConflict(err)) throw err;
      await replace();
    }
  } catch (err) {
    rethrowKube(`write ${what}`, err);
  }
}
