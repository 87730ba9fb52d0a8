// The kubespray the local stack runs: the stand-in's entry points laid over a real kubespray
// release, so every run goes through kubespray's own ansible version check, dynamic_groups and
// validate_inventory (its playbooks/boilerplate.yml) before the stand-in takes over, where hosts
// that share this machine's kernel and have no systemd cannot go on. The overlay links the
// release's roles, playbooks, ansible.cfg and galaxy.yml (so it runs as that release); without a
// release beside the repository, the stand-in runs alone, with its own checks.
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { REAL_KUBESPRAY, REPO_ROOT } from './paths.js';

export const KUBESPRAY_STAND_IN = join(REPO_ROOT, 'local-stack/kubespray-stand-in');

/** The release's entry points the stand-in replaces (the ones hostflow runs). */
const ENTRY_POINTS = [
  'cluster.yml',
  'scale.yml',
  'remove-node.yml',
  'reset.yml',
  'upgrade-cluster.yml',
];
/** In the overlay, the stand-in's checks are kubespray's. */
const CHECKS = 'validate.yml';
const REAL_CHECKS = 'real-checks.yml';

/** Lays the overlay out under `stateDir` (anew each time) and returns it; or the stand-in alone. */
export function localKubespray(stateDir: string, release = REAL_KUBESPRAY): string {
  if (!existsSync(join(release, 'playbooks', 'boilerplate.yml'))) return KUBESPRAY_STAND_IN;
  const dir = join(stateDir, 'kubespray-overlay');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const entry of readdirSync(release)) {
    if (!ENTRY_POINTS.includes(entry)) symlinkSync(join(release, entry), join(dir, entry));
  }
  for (const entry of readdirSync(KUBESPRAY_STAND_IN)) {
    if (!entry.endsWith('.yml') || entry === CHECKS || entry === REAL_CHECKS) continue;
    symlinkSync(join(KUBESPRAY_STAND_IN, entry), join(dir, entry));
  }
  symlinkSync(join(KUBESPRAY_STAND_IN, REAL_CHECKS), join(dir, CHECKS));
  return dir;
}
