// Delivering a build user: provision it over SSH, hand its private key to the OTP service,
// and write the build's Secret, all in one activity so the key never leaves the worker's
// memory (never in history, payloads or logs). Retrying it replaces the key: idempotent.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { OtpClientError, type OtpClient } from '../otp-server/client.js';
import { SECRET_KEYS } from '../platform-config/contract.js';
import type { Host, TaskRunRef } from '../shared/types.js';
import type { KubernetesActivities } from './kubernetes/taskruns.js';
import { provisionBuildUser, type SshDeps } from './ssh/build-users.js';

export interface OtpDelivery {
  client: OtpClient;
  /** The redeem URL as build pods reach it (written into `otp-server`). */
  publicRedeemUrl: string;
  /** PEM of the CA that signs the OTP service certificate (written into `otp-ca`). */
  caPem: string;
}

export interface DeliveryDeps {
  ssh: SshDeps;
  otp?: OtpDelivery;
  writeTaskRunSecret: KubernetesActivities['writeTaskRunSecret'];
}

export function createDeliveryActivities({ ssh, otp, writeTaskRunSecret }: DeliveryDeps) {
  return {
    async deliverBuildUser(input: {
      host: Host;
      taskRun: TaskRunRef;
      platform: string;
    }): Promise<{ user: string; userDir: string }> {
      if (!otp) {
        throw ApplicationFailure.nonRetryable(
          'the OTP service is not configured on this worker: set HOSTFLOW_OTP_URL, HOSTFLOW_OTP_CA_FILE and HOSTFLOW_OTP_STORE_TOKEN_FILE',
          'OtpNotConfigured',
        );
      }
      const { host, taskRun } = input;
      // Heartbeats let the server notice a dead worker within the heartbeat timeout, not the
      // whole start-to-close timeout, and retry elsewhere.
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
      try {
        return await deliver(ssh, otp, writeTaskRunSecret, host, taskRun);
      } finally {
        clearInterval(beat);
      }
    },
  };
}

const HEARTBEAT_MS = 2_000;

async function deliver(
  ssh: SshDeps,
  otp: OtpDelivery,
  writeTaskRunSecret: DeliveryDeps['writeTaskRunSecret'],
  host: Host,
  taskRun: TaskRunRef,
): Promise<{ user: string; userDir: string }> {
  const { user, userDir, privateKey } = await provisionBuildUser(ssh, {
    host,
    namespace: taskRun.namespace,
    taskRunName: taskRun.name,
  });
  let token: string;
  try {
    token = await otp.client.storeKey(privateKey);
  } catch (err) {
    const retryable = !(err instanceof OtpClientError) || err.retryable;
    const message = `store the build user's key in the OTP service: ${(err as Error).message}`;
    throw retryable
      ? ApplicationFailure.retryable(message, 'OtpUnavailable')
      : ApplicationFailure.nonRetryable(message, 'OtpRejected');
  }
  await writeTaskRunSecret({
    ...taskRun,
    data: {
      [SECRET_KEYS.otp]: token,
      [SECRET_KEYS.otpCa]: otp.caPem,
      [SECRET_KEYS.otpServer]: otp.publicRedeemUrl,
      [SECRET_KEYS.host]: `${user}@${host.address}`,
      [SECRET_KEYS.userDir]: userDir,
    },
  });
  return { user, userDir };
}

export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
