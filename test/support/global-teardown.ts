// Stops what global-setup started and removes its state directory.
import { rmSync } from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const components = globalThis.__hostflowComponents ?? [];
  await Promise.allSettled(components.map((c) => c.stop()));
  const dir = globalThis.__hostflowStateDir;
  if (dir && !process.env.HOSTFLOW_KEEP_TEST_STATE) rmSync(dir, { recursive: true, force: true });
}
