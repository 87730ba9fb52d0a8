// Delivering a build user: provision it over SSH, hand its private key to the OTP service,
// and write the build's Secret, all in one activity so the key never leaves the worker's
// memory (never in history, payloads or logs).
//
// What failed is in the failure's type (shared/failures.ts): the host's own failures
// (Ssh*), its config (AdminKey*), the OTP service (Otp*) or Kubernetes (Kubernetes*). A retry
// after the Secret was written returns what was delivered and touches nothing: the build may
// already hold that key.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { OtpClientError, type OtpClient } from './otp-client.js';
import { SECRET_KEYS } from '../platform-config/contract.js';
import type { Host } from '../platform-config/host.js';
import type { TaskRunRef } from '../shared/contracts/taskrun.js';
import type { KubernetesActivities } from './kubernetes/taskruns.js';
import { provisionBuildUser, type SshDeps } from './ssh/build-users.js';

export interface OtpDelivery {
  /** Its CA (`otp-ca` in the Secret) and store token follow their files as they rotate. */
  client: OtpClient;
  /** The redeem URL as build pods reach it (written into `otp-server`). */
  publicRedeemUrl: string;
}

export interface DeliveryDeps {
  ssh: SshDeps;
  otp?: OtpDelivery;
  kube: Pick<
    KubernetesActivities,
    'writeTaskRunSecret' | 'readServedSecret' | 'admitsTaskRunSecret'
  >;
}

export interface DeliveryInput {
  host: Host;
  taskRun: TaskRunRef;
  platform: string;
}

export function createDeliveryActivities({ ssh, otp, kube }: DeliveryDeps) {
  return {
    async deliverBuildUser(input: DeliveryInput): Promise<{ user: string; userDir: string }> {
      if (!otp) {
        throw ApplicationFailure.nonRetryable(
          'the OTP service is not configured on this worker: set HOSTFLOW_OTP_URL, HOSTFLOW_OTP_CA_FILE and HOSTFLOW_OTP_STORE_TOKEN_FILE',
          'OtpNotConfigured',
        );
      }
      // Heartbeats let the server notice a dead worker within the heartbeat timeout, not the
      // whole start-to-close timeout, and retry elsewhere.
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
      try {
        if (context.info.attempt > 1) {
          const delivered = await alreadyDelivered(kube, input);
          if (delivered) return delivered;
        }
        return await deliver(ssh, otp, kube, input);
      } finally {
        clearInterval(beat);
      }
    },
  };
}

const HEARTBEAT_MS = 2_000;

/** The keys of a served build's Secret (the MPC contract). */
const SERVED_SECRET_KEYS = [
  SECRET_KEYS.otp,
  SECRET_KEYS.otpCa,
  SECRET_KEYS.otpServer,
  SECRET_KEYS.host,
  SECRET_KEYS.userDir,
];

/** What an earlier attempt delivered to this host, if it got as far as the Secret. */
async function alreadyDelivered(
  kube: DeliveryDeps['kube'],
  { host, taskRun }: DeliveryInput,
): Promise<{ user: string; userDir: string } | undefined> {
  const served = await kube.readServedSecret(taskRun);
  if (!served?.userDir) return undefined;
  const at = served.host.lastIndexOf('@');
  if (served.host.slice(at + 1) !== host.address) return undefined;
  return { user: served.host.slice(0, at), userDir: served.userDir };
}

async function deliver(
  ssh: SshDeps,
  otp: OtpDelivery,
  kube: DeliveryDeps['kube'],
  { host, taskRun }: DeliveryInput,
): Promise<{ user: string; userDir: string }> {
  // A namespace that refuses the Secret (quota, admission) gets no build user nor OTP record.
  await kube.admitsTaskRunSecret({ ...taskRun, keys: SERVED_SECRET_KEYS });
  const { user, userDir, privateKey } = await provisionBuildUser(ssh, { host, taskRun });
  let token: string;
  try {
    token = await otp.client.storeKey(privateKey);
  } catch (err) {
    throw otpFailure(err);
  }
  await kube.writeTaskRunSecret({
    ...taskRun,
    data: {
      [SECRET_KEYS.otp]: token,
      [SECRET_KEYS.otpCa]: otp.client.caPem,
      [SECRET_KEYS.otpServer]: otp.publicRedeemUrl,
      [SECRET_KEYS.host]: `${user}@${host.address}`,
      [SECRET_KEYS.userDir]: userDir,
    },
  });
  return { user, userDir };
}

function otpFailure(err: unknown): ApplicationFailure {
  const message = `store the build user's key in the OTP service: ${(err as Error).message}`;
  if (!(err instanceof OtpClientError))
    return ApplicationFailure.retryable(message, 'OtpUnavailable');
  if (err.status === 401 || err.status === 403) {
    return ApplicationFailure.retryable(
      `${message}; the service does not accept the worker's store token: make ` +
        'HOSTFLOW_OTP_STORE_TOKEN_FILE hold the token the service expects',
      'OtpUnauthorized',
    );
  }
  return err.retryable
    ? ApplicationFailure.retryable(message, 'OtpUnavailable')
    : ApplicationFailure.nonRetryable(message, 'OtpRejected');
}

export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
