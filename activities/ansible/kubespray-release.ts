// Which kubespray releases the worker can run, and whether the runner image's ansible-core can
// run each. A release names the ansible-core it needs in playbooks/ansible_version.yml and fails
// its first play on any other; reading that range here refuses a mismatch before any host is
// touched, naming both versions, instead of after keys were handed out.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export interface KubesprayCheckout {
  dir: string;
  /** From galaxy.yml (`2.31.0`); undefined for a checkout that names none, such as a stand-in. */
  version?: string;
  /** The ansible-core range it asserts: min <= version < max. */
  ansibleCore?: { min: string; max: string };
}

/** Reads a checkout's release and its ansible-core range; what it lacks stays undefined. */
export function readCheckout(dir: string): KubesprayCheckout {
  const checkout: KubesprayCheckout = { dir };
  const galaxy = yamlOf(join(dir, 'galaxy.yml')) as { version?: unknown } | undefined;
  if (galaxy?.version !== undefined) checkout.version = String(galaxy.version);
  const plays = yamlOf(join(dir, 'playbooks', 'ansible_version.yml'));
  const vars = Array.isArray(plays)
    ? (plays as Array<{ vars?: Record<string, unknown> }>).find((play) => play?.vars)?.vars
    : undefined;
  if (vars?.minimal_ansible_version && vars.maximal_ansible_version) {
    checkout.ansibleCore = {
      min: String(vars.minimal_ansible_version),
      max: String(vars.maximal_ansible_version),
    };
  }
  return checkout;
}

function yamlOf(file: string): unknown {
  return existsSync(file) ? parse(readFileSync(file, 'utf8')) : undefined;
}

/** `v2.31.0` and `2.31.0` name the same release. */
export const releaseName = (version: string) => version.replace(/^v/, '');

/** Numeric comparison of dotted versions; a pre-release suffix (`2.19.0rc1`) counts as its base. */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) => v.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff) return diff;
  }
  return 0;
}

/**
 * The checkout that serves `wanted` (the first one when a Provisioning pins none), or why none
 * can: not installed on this worker, or needing another ansible-core than the runner image's.
 */
export function chooseCheckout(
  checkouts: KubesprayCheckout[],
  wanted: string | undefined,
  ansibleCore: string,
): { checkout: KubesprayCheckout } | { problem: string } {
  const installed = checkouts.map((c) => (c.version ? `v${c.version}` : `${c.dir} (no release)`));
  const checkout = wanted
    ? checkouts.find((c) => c.version && releaseName(c.version) === releaseName(wanted))
    : checkouts[0];
  if (!checkout) {
    return {
      problem: `kubespray v${releaseName(wanted!)} is not installed on the worker (it has ${installed.join(', ') || 'none'}): pin one of those, or install it and add it to HOSTFLOW_KUBESPRAY_DIR`,
    };
  }
  const range = checkout.ansibleCore;
  if (
    range &&
    (compareVersions(ansibleCore, range.min) < 0 || compareVersions(ansibleCore, range.max) >= 0)
  ) {
    const name = checkout.version
      ? `kubespray v${checkout.version}`
      : `kubespray at ${checkout.dir}`;
    return {
      problem: `${name} needs ansible-core >= ${range.min} and < ${range.max}, but the runner image runs ansible-core ${ansibleCore}: pin a release made for ansible-core ${ansibleCore}, or build the runner image with that release's requirements.txt and set HOSTFLOW_RUNNER_ANSIBLE_CORE to its ansible-core`,
    };
  }
  return { checkout };
}
