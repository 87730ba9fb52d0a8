// Cloud VM activities for dynamic platforms: launch, describe, terminate through the platform's
// provider, and "is SSH answering yet?". Credentials are read from their Secret on each call and
// never leave the worker; results carry only ids, states and addresses.
import type { CoreV1Api } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import type { TaskRunRef } from '../kubernetes.js';
import { awsCredentialsFromSecret } from './aws-credentials.js';
import { AwsProvider } from './aws.js';
import { OWNER_TAG_KEY, TASKRUN_TAG_KEY, type Instance } from './provider.js';

export interface CloudDeps {
  core: CoreV1Api;
  engineNamespace: string;
  /** EC2 endpoint override (moto in the tests and the local stack). */
  awsEndpoint?: string;
}

const SSH_PROBE_TIMEOUT_MS = 3_000;

export function createCloudActivities(deps: CloudDeps) {
  async function withProvider<T>(
    cloud: CloudPlatform,
    fn: (p: AwsProvider) => Promise<T>,
  ): Promise<T> {
    if (cloud.provider.type !== 'aws') {
      throw new Error(`provider ${cloud.provider.type} is not served by this worker yet`);
    }
    const config = cloud.provider.config;
    const credentials = await awsCredentialsFromSecret(
      deps.core,
      deps.engineNamespace,
      config.awsSecret,
      `dynamic.${cloud.configName}.aws-secret`,
    );
    const provider = new AwsProvider({
      configName: cloud.configName,
      config,
      credentials,
      credentialsSource: `${deps.engineNamespace}/${config.awsSecret}`,
      endpoint: deps.awsEndpoint,
    });
    try {
      return await fn(provider);
    } finally {
      provider.destroy();
    }
  }

  return {
    /** Idempotent per (TaskRun, attempt): a retried launch returns the same VM. */
    async launchInstance(input: {
      cloud: CloudPlatform;
      taskRun: TaskRunRef;
      attempt: number;
      /** additional-instance-tags. */
      additionalTags?: Record<string, string>;
    }): Promise<Instance & { sshUser: string }> {
      const { cloud, taskRun, attempt } = input;
      const suffix = createHash('sha256')
        .update(`${taskRun.uid}/${attempt}`)
        .digest('hex')
        .slice(0, 10);
      return withProvider(cloud, async (provider) => ({
        ...(await provider.launch({
          name: `${cloud.common.instanceTag}-${suffix}`,
          owner: { key: OWNER_TAG_KEY, value: cloud.common.instanceTag },
          tags: {
            ...input.additionalTags,
            [TASKRUN_TAG_KEY]: `${taskRun.namespace}:${taskRun.name}`,
          },
          idempotencyKey: `${taskRun.uid}-${attempt}`,
        })),
        sshUser: provider.sshUser,
      }));
    },

    async describeInstance(input: {
      cloud: CloudPlatform;
      id: string;
    }): Promise<Instance | undefined> {
      return withProvider(input.cloud, (provider) => provider.describe(input.id));
    },

    /** Idempotent: an instance that is already gone counts as terminated. */
    async terminateInstance(input: { cloud: CloudPlatform; id: string }): Promise<void> {
      await withProvider(input.cloud, (provider) => provider.terminate(input.id));
    },

    /** Whether an SSH server answers at the address (its banner arrives). */
    async sshReachable(input: { address: string }): Promise<boolean> {
      return new Promise((resolve) => {
        const socket = connect({ host: input.address, port: 22, timeout: SSH_PROBE_TIMEOUT_MS });
        const done = (ok: boolean) => {
          socket.destroy();
          resolve(ok);
        };
        socket.once('data', (chunk: Buffer) => done(chunk.toString('latin1').startsWith('SSH-')));
        socket.once('timeout', () => done(false));
        socket.once('error', () => done(false));
      });
    },
  };
}

export type CloudActivities = ReturnType<typeof createCloudActivities>;
