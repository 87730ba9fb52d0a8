// The local stack's runner: the local node (kubelet.ts), the runner image built with the
// kubespray checkouts the local worker offers and imported into the node's containerd, and the
// runner namespace as deploy/base makes it (Pod Security `restricted`). What a worker needs to
// run its Jobs there is `env`.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import { DEFAULT_RUNNER_NAMESPACE, RUNNER_NAMESPACE_LABEL } from '../shared/runner-settings.js';
import { KUBESPRAY_STAND_IN, localKubespray } from './kubespray-overlay.js';
import { RUNNER_NODE_LABEL, startLocalNode, type LocalNode } from './kubelet.js';
import type { LocalCa } from './pki.js';
import { REAL_KUBESPRAY } from './paths.js';
import { runBuildScript } from './build-script.js';

export interface LocalRunner {
  node: LocalNode;
  image: string;
  /** What a build pod's step runs on the node (ensureBuildStepImage). */
  buildStepImage: string;
  /** The worker's runner settings for this stack. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

const cacheDir = () => join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'hostflow');

/**
 * The runner image with every kubespray the local stack's workers may be given: the stand-in
 * over the real release (kubespray-overlay.ts), the release itself, the stand-in alone; each at
 * /opt/kubespray/<the folder name a worker's HOSTFLOW_KUBESPRAY_DIR entry has>.
 */
export function ensureRunnerImage(stateDir: string): Promise<BuiltImage> {
  const checkouts = [
    `kubespray-stand-in=${KUBESPRAY_STAND_IN}`,
    ...(existsSync(join(REAL_KUBESPRAY, 'cluster.yml'))
      ? [
          `kubespray-overlay=${localKubespray(join(stateDir, 'runner-kubespray'))}`,
          `${basename(REAL_KUBESPRAY)}=${REAL_KUBESPRAY}`,
        ]
      : []),
  ];
  return buildOnBase('the runner image', 'deploy/runner-image/build.sh', checkouts);
}

/** The image build pods run on the local node (local-stack/build-pod-image): curl and ssh. */
export const ensureBuildStepImage = (): Promise<BuiltImage> =>
  buildOnBase('the build step image', 'local-stack/build-pod-image/build.sh', []);

interface BuiltImage {
  image: string;
  /** Its docker archive, for containerd. */
  tar: string;
}

/** Runs one of the builds on hostflow's base (deploy/image/build-on-base.sh). */
async function buildOnBase(what: string, script: string, args: string[]): Promise<BuiltImage> {
  const [image, tar] = await runBuildScript(what, script, args, 2);
  return { image: image!, tar: tar! };
}

export async function startLocalRunner(options: {
  bin: string;
  apiUrl: string;
  ca: LocalCa;
  admin: KubeConfig;
  stateDir: string;
  logDir?: string;
  restart?: boolean;
}): Promise<LocalRunner> {
  const [nodeStart, imageStart] = await Promise.allSettled([
    startLocalNode({
      ...options,
      dir: join(options.stateDir, 'node'),
      imageDir: join(cacheDir(), 'containerd'),
    }),
    // One after the other: both build on the base, which the first makes if it is missing.
    ensureRunnerImage(options.stateDir).then(async (runner) => ({
      runner,
      buildStep: await ensureBuildStepImage(),
    })),
  ]);
  if (nodeStart.status === 'rejected') throw nodeStart.reason;
  const node = nodeStart.value;
  try {
    if (imageStart.status === 'rejected') throw imageStart.reason;
    const built = imageStart.value;
    await node.importImage(built.runner.image, built.runner.tar);
    await node.importImage(built.buildStep.image, built.buildStep.tar);
    await ensureRunnerNamespace(options.admin, DEFAULT_RUNNER_NAMESPACE);
    return {
      node,
      image: built.runner.image,
      buildStepImage: built.buildStep.image,
      env: {
        HOSTFLOW_RUNNER_IMAGE: built.runner.image,
        HOSTFLOW_RUNNER_NAMESPACE: DEFAULT_RUNNER_NAMESPACE,
        HOSTFLOW_RUNNER_NODE_SELECTOR: `${RUNNER_NODE_LABEL}=true`,
      },
      stop: async () => {
        await node.stop();
        // Said, not hidden: a stop that left something on the machine is a defect to fix.
        const left = await node.leftovers();
        if (left.length) throw new Error(`the local node left behind: ${left.join('; ')}`);
      },
    };
  } catch (err) {
    await node.stop();
    throw err;
  }
}

/** The runner namespace, as deploy/base/namespaces.yaml has it: Pod Security `restricted`. */
export async function ensureRunnerNamespace(kc: KubeConfig, name: string) {
  const core = kc.makeApiClient(CoreV1Api);
  const labels = {
    // The engine may write its runner bundles here (deploy/engine-rights).
    [RUNNER_NAMESPACE_LABEL]: 'true',
    'pod-security.kubernetes.io/enforce': 'restricted',
    'pod-security.kubernetes.io/enforce-version': 'latest',
  };
  try {
    await core.createNamespace({ body: { metadata: { name, labels } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
    // One an older stack made gains the label.
    await core.patchNamespace({ name, body: { metadata: { labels } } }, MERGE_PATCH);
  }
}
