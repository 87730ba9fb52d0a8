// The production manifests as an install renders them (`kubectl kustomize` of an overlay), with
// the kubectl built alongside the test API server, so both are the same release.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { ensureKubeBinaries } from '../../local-stack/kube-apiserver.js';
import { REPO_ROOT } from '../../local-stack/paths.js';
import { testEnv, uniqueSuffix } from './env.js';

const run = promisify(execFile);

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** kubectl against the test API server as its admin. Rejects with kubectl's stderr. */
export async function kubectl(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const bin = join(await ensureKubeBinaries(), 'kubectl');
  try {
    return await run(bin, ['--kubeconfig', testEnv('kubeconfig'), ...args], {
      maxBuffer: 32 << 20,
    });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')}: ${e.stderr || e.message}`, { cause: err });
  }
}

/** `kubectl kustomize <dir>` (relative to the repository), as objects. */
export async function renderManifests(dir: string): Promise<Manifest[]> {
  const { stdout } = await kubectl(['kustomize', isAbsolute(dir) ? dir : join(REPO_ROOT, dir)]);
  return parseAllDocuments(stdout).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${dir}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Manifest;
  });
}

/** Writes objects to a file kubectl can apply (-f). */
export function manifestFile(objects: Manifest[]): string {
  const dir = mkdtempSync(join(testEnv('stateDir'), 'manifests-'));
  const file = join(dir, 'objects.yaml');
  writeFileSync(file, objects.map((o) => stringify(o)).join('---\n'));
  return file;
}

export const ofKind = (objects: Manifest[], kind: string) => objects.filter((o) => o.kind === kind);

export function named(objects: Manifest[], kind: string, name: string): Manifest {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`the manifests have no ${kind} ${name}`);
  return found;
}

/** Where the manifests put the engine's objects, and the OTP service's records. */
const MANIFEST_NAMESPACE = 'multi-platform-controller';
const MANIFEST_OTP_NAMESPACE = 'hostflow-otp';
const MANIFEST_RUNNER_NAMESPACE = 'hostflow-runners';
const RBAC_KINDS = ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];

/**
 * The manifests' RBAC moved into a test file's namespaces (`engineNamespace` and `otpNamespace`),
 * cluster-wide names made unique: the engine's accounts with exactly their rights.
 */
export function rbacFor(
  objects: Manifest[],
  scope: { engineNamespace: string; otpNamespace: string },
): Manifest[] {
  const sfx = uniqueSuffix();
  const renamed = (name: string) => `${name}-${sfx}`;
  const places: Record<string, string> = {
    [MANIFEST_NAMESPACE]: scope.engineNamespace,
    [MANIFEST_OTP_NAMESPACE]: scope.otpNamespace,
    // The runners' rights land in the engine's namespace: these tests run no ansible.
    [MANIFEST_RUNNER_NAMESPACE]: scope.engineNamespace,
  };
  return objects
    .filter((o) => RBAC_KINDS.includes(o.kind))
    .map((o) => {
      const copy = structuredClone(o) as Manifest & {
        subjects?: Array<{ namespace?: string }>;
        roleRef?: { kind: string; name: string };
      };
      if (copy.metadata.namespace) {
        const place = places[copy.metadata.namespace];
        if (!place) throw new Error(`${o.kind} ${o.metadata.name}: in ${o.metadata.namespace}`);
        copy.metadata.namespace = place;
      } else {
        copy.metadata.name = renamed(copy.metadata.name);
      }
      for (const subject of copy.subjects ?? []) subject.namespace = scope.engineNamespace;
      if (copy.roleRef?.kind === 'ClusterRole') copy.roleRef.name = renamed(copy.roleRef.name);
      return copy;
    });
}
