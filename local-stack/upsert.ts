// The local stack's one way to create or replace the objects it installs (CRDs, policies, the
// demo's Secrets, ConfigMaps and Nodes): installing again over a resumed cluster brings them up to
// date with an update, which a Lock against deletion allows, never by deleting them first.
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { kubeErrorLine, statusCode } from '../shared/kube-errors.js';

/**
 * Replaces the object named like `body` at its current resourceVersion, or creates it. A failure
 * says what was written (`what`, e.g. `Secret ns/name`; by default the name) and the API server's
 * answer in one line.
 */
export async function upsert<T extends { metadata?: { name?: string; resourceVersion?: string } }>(
  read: (name: string) => Promise<T>,
  create: (body: T) => Promise<unknown>,
  replace: (name: string, body: T) => Promise<unknown>,
  body: T,
  what = body.metadata!.name!,
): Promise<void> {
  const name = body.metadata!.name!;
  try {
    try {
      const existing = await read(name);
      body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
      await replace(name, body);
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
      await create(body);
    }
  } catch (err) {
    throw new Error(`write ${what}: ${kubeErrorLine(err)}`, { cause: err });
  }
}

/** `upsert` for a Secret of `namespace`, named in a failure as `Secret ns/name`. */
export function upsertSecret(core: CoreV1Api, namespace: string, body: V1Secret): Promise<void> {
  return upsert(
    (name) => core.readNamespacedSecret({ name, namespace }),
    (created) => core.createNamespacedSecret({ namespace, body: created }),
    (name, replaced) => core.replaceNamespacedSecret({ name, namespace, body: replaced }),
    body,
    `Secret ${namespace}/${body.metadata!.name!}`,
  );
}
