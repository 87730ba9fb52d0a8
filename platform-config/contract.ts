// Names fixed by the original multi-platform-controller contract (docs/architecture.md, "The TaskRun contract").
// Dashboards and build tasks depend on these exact strings: the one place they are spelled.

const PREFIX = 'build.appstudio.redhat.com';

export const PLATFORM_PARAM = 'PLATFORM';
export const SECRET_PREFIX = 'multi-platform-ssh-';
export const HOST_CONFIG_NAME = 'host-config';
export const DEFAULT_ENGINE_NAMESPACE = 'multi-platform-controller';
/** Where the OTP service keeps its records: apart from the engine's admin keys and credentials. */
export const DEFAULT_OTP_NAMESPACE = 'hostflow-otp';
export const LOCALHOST = 'localhost';
/**
 * The original controller's finalizer on each TaskRun it served. After a move to hostflow nobody
 * would remove it: a TaskRun's workflow does, once the TaskRun has ended and it has cleaned up.
 */
export const ORIGINAL_FINALIZER = 'appstudio.io/multi-platform-finalizer';

export const LABELS = {
  multiPlatformSecret: `${PREFIX}/multi-platform-secret`,
  multiPlatformConfig: `${PREFIX}/multi-platform-config`,
  assignedHost: `${PREFIX}/assigned-host`,
  targetPlatform: `${PREFIX}/target-platform`,
  waitingForPlatform: `${PREFIX}/waiting-for-platform`,
} as const;

export const ANNOTATIONS = {
  failedHosts: `${PREFIX}/failed-hosts`,
  cloudInstanceId: `${PREFIX}/cloud-instance-id`,
  cloudAddress: `${PREFIX}/cloud-address`,
  allocationStartTime: `${PREFIX}/allocation-start-time`,
  /** hostflow's own: which TaskRun (by uid) a Secret belongs to, so a same-named successor is safe. */
  ownerUid: 'hostflow.dev/taskrun-uid',
  /**
   * hostflow's own, on a TaskRun's live pods: the resourceVersion of the Secret just written. The
   * change itself is the point, as the original controller's assigned-host annotation on the pod:
   * the kubelet looks at the pod again (activities/kubernetes/build-pods.ts).
   */
  secretWritten: 'hostflow.dev/ssh-secret-written',
} as const;

/** The label Tekton gives a TaskRun's pods: the TaskRun's name. */
export const TEKTON_TASKRUN_LABEL = 'tekton.dev/taskRun';

/** Keys of the Secret handed to the build task. */
export const SECRET_KEYS = {
  otp: 'otp',
  otpCa: 'otp-ca',
  otpServer: 'otp-server',
  host: 'host',
  userDir: 'user-dir',
  error: 'error',
} as const;

export function secretNameFor(taskRunName: string): string {
  return `${SECRET_PREFIX}${taskRunName}`;
}

/** `linux/arm64` → `linux-arm64`: the form used in label values and config key names. */
export function platformLabel(platform: string): string {
  return platform.replace(/\//g, '-');
}

/** The owner tag key the original controller used for `instance-tag`. */
export const OWNER_TAG_KEY = 'multi-platform-instance';
/** Tag carrying the TaskRun a dynamic VM belongs to: `<namespace>:<name>`. */
export const TASKRUN_TAG_KEY = 'hostflow.dev/taskrun';
/** Tag carrying the platform a VM serves, so platforms sharing an instance-tag stay apart. */
export const PLATFORM_TAG_KEY = 'hostflow.dev/platform';

/**
 * A claim on a VM by its id rather than by launch key (CloudLaunches): a VM a pool adopted after
 * a crash, or one serving a running TaskRun. Garbage collection spares claimed VMs.
 */
export const ADOPTED_CLAIM_PREFIX = 'adopted:';
export const claimById = (instanceId: string): string => `${ADOPTED_CLAIM_PREFIX}${instanceId}`;
