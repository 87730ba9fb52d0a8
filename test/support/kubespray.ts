// kubespray in the tests: the worker's settings for it, and sshd test hosts as kubespray finds them
// after key distribution (the cluster's installer key in the admin user's authorized_keys, and its
// Secret, key id_rsa, in a namespace of the test's own).
import { expect } from '@jest/globals';
import { createRunner } from '../../activities/runner/job.js';
import { DEFAULT_RUNNER_SETTINGS, type RunnerSettings } from '../../shared/runner-settings.js';
import { createKubeconfigFetcher } from '../../activities/ssh/admin-kubeconfig.js';
import { join } from 'node:path';
import { createPlaybookActivities } from '../../activities/ansible/playbook.js';
import { createAdminKeyReader } from '../../activities/kubernetes/admin-keys.js';
import { createKubeconfigStore } from '../../activities/kubernetes/kubeconfig-secret.js';
import { createHostKeys } from '../../activities/ssh/host-keys.js';
import { generateEd25519KeyPair } from '../../activities/ssh/keys.js';
import { KUBESPRAY_STAND_IN, localKubespray } from '../../local-stack/kubespray-overlay.js';
import { REAL_KUBESPRAY } from '../../local-stack/paths.js';
import { startSshHosts, type SshHostPool } from '../../local-stack/ssh-hosts.js';
import { kube, runnerEnv, testEnv } from './env.js';

export const INSTALLER_KEY_SECRET = 'installer-key';

/**
 * A worker's kubespray settings as `npm start` has them: the stand-in laid over the real release
 * (kubespray's own checks, then the stand-in), clusters' files per file.
 */
export function kubesprayWorkerEnv(sfx: string) {
  const kubespray = localKubespray(join(testEnv('stateDir'), `kubespray-${sfx}`));
  // Without the release the stand-in runs alone, without kubespray's checks the tests expect.
  if (kubespray === KUBESPRAY_STAND_IN) {
    throw new Error(
      `no kubespray release at ${REAL_KUBESPRAY}: clone the repository beside shared/ (as CI ` +
        'does), or set HOSTFLOW_REAL_KUBESPRAY to an unmodified kubespray v2.31.0',
    );
  }
  return {
    HOSTFLOW_KUBESPRAY_DIR: kubespray,
    HOSTFLOW_PROVISIONING_DIR: join(testEnv('stateDir'), `clusters-${sfx}`),
    ...runnerEnv(),
  };
}

/**
 * The playbook activities as the worker makes them, each run a runner Job; host keys are
 * recorded in `engineNamespace` (the test's namespace).
 */
export function playbookActivities(
  kubesprayDirs: string[],
  workDir: string,
  engineNamespace: string,
) {
  const { kc, core, custom } = kube();
  const settings = testRunnerSettings();
  const readKey = (ns: string, secret: string) =>
    createAdminKeyReader({ core, engineNamespace: ns })(secret);
  const hostKeys = createHostKeys({ core, engineNamespace });
  return createPlaybookActivities({
    ansibleCore: settings.ansibleCore,
    kubesprayDirs,
    workDir,
    readKey,
    fetchKubeconfig: createKubeconfigFetcher({ hostKeys, readKey }),
    storeKubeconfig: createKubeconfigStore(core, custom),
    hostKeys,
    runner: createRunner({ kc, settings }),
    deadlineSeconds: settings.deadlineSeconds,
  });
}

/** The runner as the worker has it, on the suite's node and image. */
export function testRunnerSettings(): RunnerSettings {
  const env = runnerEnv();
  return {
    ...DEFAULT_RUNNER_SETTINGS,
    image: env.HOSTFLOW_RUNNER_IMAGE!,
    nodeSelector: Object.fromEntries([env.HOSTFLOW_RUNNER_NODE_SELECTOR!.split('=', 2)]),
  };
}

export async function startKubesprayHosts(opts: {
  count: number;
  namespace: string;
  sfx: string;
}): Promise<SshHostPool> {
  const { core } = kube();
  const installer = generateEd25519KeyPair('test');
  const pool = await startSshHosts({
    count: opts.count,
    stateDir: join(testEnv('stateDir'), `ssh-${opts.namespace}`),
    prefix: `ks${opts.sfx.slice(0, 4)}`,
  });
  for (const host of pool.hosts) {
    const added = await host.exec([
      'sh',
      '-c',
      'printf "%s\\n" "$1" >> "/home/$2/.ssh/authorized_keys"',
      'sh',
      installer.publicKey,
      host.adminUser,
    ]);
    expect(added.code).toBe(0);
  }
  await core.createNamespace({ body: { metadata: { name: opts.namespace } } });
  await core.createNamespacedSecret({
    namespace: opts.namespace,
    body: {
      metadata: { name: INSTALLER_KEY_SECRET },
      stringData: { id_rsa: installer.privateKey },
    },
  });
  return pool;
}

export async function stopKubesprayHosts(pool: SshHostPool | undefined, namespace: string) {
  const { core } = kube();
  await pool?.stop();
  await core.deleteCollectionNamespacedSecret({ namespace }).catch(() => undefined);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
}
