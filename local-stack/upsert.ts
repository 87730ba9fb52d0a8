// Create-or-replace for objects the local stack installs (CRDs, policies), so installing again
// over a resumed cluster brings them up to date.
import { statusCode } from '../shared/kube-errors.js';

/** Replaces the object named like `body` at its current resourceVersion, or creates it. */
export async function upsert<T extends { metadata?: { name?: string; resourceVersion?: string } }>(
  read: (name: string) => Promise<T>,
  create: (body: T) => Promise<unknown>,
  replace: (name: string, body: T) => Promise<unknown>,
  body: T,
): Promise<void> {
  const name = body.metadata!.name!;
  try {
    const existing = await read(name);
    body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
    await replace(name, body);
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    await create(body);
  }
}
