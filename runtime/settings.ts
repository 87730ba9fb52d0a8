// Process settings from the environment, validated up front so a typo fails at start with the
// variable's name instead of later with a confusing connection error.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { z } from 'zod';
import { shareConnections } from './kube-connections.js';
import { LOG_LEVELS } from './logger.js';
import { DEFAULT_ENGINE_NAMESPACE } from '../platform-config/contract.js';
import { parseFamilies } from '../shared/families.js';
import { TASK_QUEUE } from '../shared/task-queue.js';
import {
  DEFAULT_RUNNER_SETTINGS,
  parseMirror,
  type RunnerSettings,
} from '../shared/runner-settings.js';
import { patternProblem } from '../platform-config/namespace-patterns.js';

const hostPort = z
  .string()
  .regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port, for example 127.0.0.1:7233');
const flag = z.enum(['true', 'false', '1', '0', '']).transform((v) => v === 'true' || v === '1');

/** A comma-separated list (blanks dropped), each entry read by `read`: a value, or its problem. */
const commaListOf = <T>(read: (entry: string) => T | { problem: string }) =>
  z
    .string()
    .default('')
    .transform((text, ctx) => {
      const values: T[] = [];
      for (const entry of text.split(',').map((e) => e.trim())) {
        if (!entry) continue;
        const value = read(entry);
        if (value && typeof value === 'object' && 'problem' in value) {
          ctx.addIssue({ code: 'custom', message: value.problem });
        } else values.push(value as T);
      }
      return values;
    });

/** A comma-separated list (blanks dropped); `problem` names what is wrong with an entry. */
const commaList = (problem: (entry: string) => string | undefined) =>
  commaListOf((entry) => {
    const message = problem(entry);
    return message ? { problem: message } : entry;
  });

/** A Kubernetes resource quantity: `500m`, `1`, `256Mi`, `1Gi`. */
const quantity = z
  .string()
  .regex(
    /^\d+(\.\d+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/,
    'must be a Kubernetes quantity, e.g. 500m, 1, 256Mi or 1Gi',
  );

/** Parses `env` with `schema`, or throws one error naming every bad variable. */
export function parseEnv<T extends z.ZodType>(
  schema: T,
  env: NodeJS.ProcessEnv,
  what: string,
): z.infer<T> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid ${what} in the environment:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

const EnvSchema = z.object({
  // Same names as the temporal CLI, so one environment serves both.
  TEMPORAL_ADDRESS: hostPort.default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_API_KEY: z.string().optional(),
  /**
   * A file holding the API key (a mounted Secret), read again whenever it changes: a rotated key
   * is taken up without a restart. Instead of TEMPORAL_API_KEY.
   */
  TEMPORAL_API_KEY_FILE: z.string().optional(),
  TEMPORAL_TLS: flag.optional(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: z.string().optional(),
  TEMPORAL_TLS_CLIENT_KEY_PATH: z.string().optional(),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: z.string().optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().optional(),
  HOSTFLOW_TASK_QUEUE: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only')
    .default(TASK_QUEUE),
  KUBECONFIG: z.string().optional(),
  HOSTFLOW_KUBE_CONTEXT: z.string().optional(),
  HOSTFLOW_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a Kubernetes namespace name')
    .default(DEFAULT_ENGINE_NAMESPACE),
  /**
   * The families this install runs, comma-separated (shared/families.ts); empty or unset means
   * all. The bridge watches, and readiness waits for, only their resources.
   */
  HOSTFLOW_FAMILIES: z
    .string()
    .default('')
    .transform((text, ctx) => {
      try {
        return parseFamilies(text);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /** Serve TaskRuns of one namespace only; empty means every namespace. */
  HOSTFLOW_WATCH_NAMESPACE: z
    .string()
    .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/, 'must be a Kubernetes namespace name')
    .optional(),
  HOSTFLOW_METRICS_ADDRESS: hostPort.optional(),
  /** GET /healthz and /readyz for the worker's and the bridge's probes. */
  HOSTFLOW_HEALTH_ADDRESS: hostPort.optional(),
  /** The OTP service as the worker reaches it, and the files to trust and authenticate to it. */
  HOSTFLOW_OTP_URL: z.string().url().startsWith('https://', 'must be an https:// URL').optional(),
  HOSTFLOW_OTP_CA_FILE: z.string().optional(),
  HOSTFLOW_OTP_STORE_TOKEN_FILE: z.string().optional(),
  /** The OTP service as build pods reach it, when that differs from HOSTFLOW_OTP_URL. */
  HOSTFLOW_OTP_PUBLIC_URL: z
    .string()
    .url()
    .startsWith('https://', 'must be an https:// URL')
    .optional(),
  HOSTFLOW_RESYNC_SECONDS: z.coerce.number().int().min(5).max(86_400).default(300),
  /** How often the Temporal credentials' files are looked at for a change. */
  HOSTFLOW_TEMPORAL_RELOAD_SECONDS: z.coerce.number().int().min(1).max(3600).default(10),
  HOSTFLOW_WORKFLOW_BUNDLE: z.string().optional(),
  /** EC2 API endpoint override, e.g. moto's in the local stack and tests. */
  HOSTFLOW_AWS_ENDPOINT: z.string().url().optional(),
  /** IBM Cloud IAM token endpoint override, e.g. the IBM double's in the local stack and tests. */
  HOSTFLOW_IBM_IAM_ENDPOINT: z.string().url().optional(),
  /** How often cloud VMs no running workflow owns are collected (also at each worker start). */
  HOSTFLOW_CLOUD_GC_INTERVAL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300),
  /** VMs younger than this are never collected (a launch's claim may not be visible yet). */
  HOSTFLOW_CLOUD_GC_GRACE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  /** Build users and Secrets younger than this are never collected (same reason). */
  HOSTFLOW_TASKRUN_GC_GRACE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  /**
   * Events a TaskRun workflow's history may reach before it continues as new (bridge; the
   * workflow's own default, 5,000, when unset). Small values are for tests.
   */
  HOSTFLOW_TASKRUN_MAX_HISTORY: z.coerce.number().int().min(10).max(50_000).optional(),
  /** The same for a Provisioning workflow (bridge; the workflow's default, 2,000, when unset). */
  HOSTFLOW_PROVISIONING_MAX_HISTORY: z.coerce.number().int().min(10).max(50_000).optional(),
  /**
   * Provisionings: kubespray checkouts, `:`-separated like PATH: a Provisioning pins one by its
   * release, and the first serves those that pin none.
   */
  HOSTFLOW_KUBESPRAY_DIR: z
    .string()
    .transform((dirs) => dirs.split(':').filter(Boolean))
    .refine((dirs) => dirs.every((dir) => existsSync(join(dir, 'cluster.yml'))), {
      message: 'each entry must be a kubespray checkout (a directory with cluster.yml)',
    })
    .optional(),
  /** Where the worker keeps its copy of each run's log. */
  HOSTFLOW_PROVISIONING_DIR: z.string().min(1).default('/var/lib/hostflow/clusters'),
  /**
   * The runner (activities/runner): every ansible run is a Job in this namespace, from this image
   * (deploy/runner-image), on nodes with these labels (`key=value`, comma-separated), within
   * these limits.
   */
  HOSTFLOW_RUNNER_IMAGE: z.string().min(1).optional(),
  /**
   * Runs the runner Jobs in another cluster (a kubeconfig file): a cluster kept for runners, or,
   * on one machine, the one that runs the machine's only kubelet. Unset: the engine's own.
   */
  HOSTFLOW_RUNNER_KUBECONFIG: z
    .string()
    .refine((path) => existsSync(path), { message: 'must be a kubeconfig file that exists' })
    .optional(),
  HOSTFLOW_RUNNER_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
    .default(DEFAULT_RUNNER_SETTINGS.namespace),
  HOSTFLOW_RUNNER_NODE_SELECTOR: commaList((entry) =>
    /^[-./a-zA-Z0-9]+=[-._a-zA-Z0-9]*$/.test(entry)
      ? undefined
      : `"${entry}" is not a node label; expected key=value pairs, comma-separated, e.g. hostflow.dev/runner=true`,
  ),
  HOSTFLOW_RUNNER_CPU_LIMIT: quantity.default(DEFAULT_RUNNER_SETTINGS.resources.cpuLimit),
  HOSTFLOW_RUNNER_MEMORY_LIMIT: quantity.default(DEFAULT_RUNNER_SETTINGS.resources.memoryLimit),
  HOSTFLOW_RUNNER_EPHEMERAL_STORAGE_LIMIT: quantity.default(
    DEFAULT_RUNNER_SETTINGS.resources.ephemeralStorageLimit,
  ),
  HOSTFLOW_RUNNER_DEADLINE_SECONDS: z.coerce
    .number()
    .int()
    .min(10)
    .max(86_400)
    .default(DEFAULT_RUNNER_SETTINGS.deadlineSeconds),
  HOSTFLOW_RUNNER_MAX_LOG_BYTES: z.coerce
    .number()
    .int()
    .min(1 << 16)
    .max(1 << 30)
    .default(DEFAULT_RUNNER_SETTINGS.maxLogBytes),
  /**
   * Addresses runs may reach besides their cluster's nodes' sshd, such as package mirrors:
   * `CIDR:port`, comma-separated (`10.0.5.0/24:443,10.0.6.7/32:80`). Unset: none.
   */
  HOSTFLOW_RUNNER_MIRRORS: commaListOf(parseMirror),
  /** The ansible-core the runner image runs; set it with an image built from other requirements. */
  HOSTFLOW_RUNNER_ANSIBLE_CORE: z
    .string()
    .regex(/^\d+\.\d+\.\d+$/, 'must be an ansible-core version, such as 2.18.19')
    .default(DEFAULT_RUNNER_SETTINGS.ansibleCore),
  /**
   * Where a Provisioning may take BareMetalHosts besides its own namespace: comma-separated
   * regular expressions, each matching a whole namespace name (as host-config's
   * allowed-namespaces), e.g. `metal3,pool-.*`. Unset: its own namespace only.
   */
  HOSTFLOW_BAREMETAL_NAMESPACES: commaList((source) => {
    const problem = patternProblem(source);
    return problem
      ? `"${source}" is not a valid regular expression (${problem}); expected comma-separated namespace patterns such as metal3,pool-.*`
      : undefined;
  }),
  /** One more namespace Provisionings may take BareMetalHosts from (e.g. metal3): the older form. */
  HOSTFLOW_BAREMETAL_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace name')
    .optional(),
  /** An ISC dhcpd leases file, for Provisionings that take node IPs from DHCP. */
  HOSTFLOW_DHCP_LEASES_FILE: z.string().optional(),
  /** Softwares: the package manager on the nodes (apt-get's command line), a plain path. */
  HOSTFLOW_PACKAGE_MANAGER: z
    .string()
    .regex(/^[A-Za-z0-9_./-]+$/, 'a command name or absolute path, without spaces or quotes')
    .default('apt-get'),
  /**
   * Rollouts: the registries whose images preflight inspects (labels, presence), as base URLs,
   * comma-separated: `https://quay.io,http://127.0.0.1:5000`. Images elsewhere are not checked.
   */
  HOSTFLOW_IMAGE_REGISTRIES: commaList((url) =>
    /^https?:\/\/[^/\s]+\/?$/.test(url)
      ? undefined
      : `"${url}" is not a registry base URL such as https://quay.io`,
  ),
  /**
   * Worker Versioning (docs/deploy.md, "Upgrading and rolling back"): the Worker Deployment the
   * worker belongs to. Unset, the worker is unversioned and every build polls as one.
   */
  HOSTFLOW_WORKER_DEPLOYMENT: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,200}$/, 'letters, digits, "_" and "-" only (at most 200)')
    .optional(),
  /** This build's id in the deployment; by default a digest of the workflow code it runs. */
  HOSTFLOW_BUILD_ID: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,200}$/, 'letters, digits, ".", "_" and "-" only (at most 200)')
    .optional(),
  HOSTFLOW_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).default(500),
  /**
   * Workflows kept in the worker's memory between their tasks. A TaskRun's workflow has a task
   * when its build starts and when it ends; one evicted in between is replayed from its short
   * history (16–55 events). About 50 KB each, so 1,000 bound the cache to about 50 MB, where
   * the SDK's default grows with the heap limit (2,395 on a 4 GB heap). The busiest workflows,
   * the allocators, stay in it: it evicts the least recently used.
   */
  HOSTFLOW_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(2).max(100_000).default(1000),
  /** Every process's log level (runtime/logger.ts reads it before the settings are loaded). */
  HOSTFLOW_LOG_LEVEL: z
    .enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` })
    .default('info'),
});

export type Settings = z.infer<typeof EnvSchema>;

/** Every environment variable the worker and the bridge read. */
export const SETTING_NAMES: readonly string[] = Object.keys(EnvSchema.shape);

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const settings = parseEnv(EnvSchema, env, 'hostflow settings');
  if (
    Boolean(settings.TEMPORAL_TLS_CLIENT_CERT_PATH) !==
    Boolean(settings.TEMPORAL_TLS_CLIENT_KEY_PATH)
  ) {
    throw new Error(
      'invalid hostflow settings: TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go together',
    );
  }
  if (settings.TEMPORAL_API_KEY && settings.TEMPORAL_API_KEY_FILE) {
    throw new Error(
      'invalid hostflow settings: give TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE, not both',
    );
  }
  return settings;
}

/** Options accepted by both the client's Connection and the worker's NativeConnection. */
export interface TemporalConnectionOptions {
  address: string;
  apiKey?: string;
  tls: TLSConfig | false;
}

export function temporalConnection(settings: Settings): TemporalConnectionOptions {
  const read = (path: string, what: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`cannot read ${what} ${path}: ${(err as Error).message}`, { cause: err });
    }
  };
  const mtls = settings.TEMPORAL_TLS_CLIENT_CERT_PATH && settings.TEMPORAL_TLS_CLIENT_KEY_PATH;
  const apiKey = settings.TEMPORAL_API_KEY_FILE
    ? apiKeyOf(
        read(settings.TEMPORAL_API_KEY_FILE, 'TEMPORAL_API_KEY_FILE'),
        'TEMPORAL_API_KEY_FILE',
      )
    : settings.TEMPORAL_API_KEY;
  const useTls =
    settings.TEMPORAL_TLS ?? Boolean(mtls || apiKey || settings.TEMPORAL_TLS_SERVER_CA_CERT_PATH);
  return {
    address: settings.TEMPORAL_ADDRESS,
    apiKey,
    tls: useTls
      ? {
          serverNameOverride: settings.TEMPORAL_TLS_SERVER_NAME,
          serverRootCACertificate: settings.TEMPORAL_TLS_SERVER_CA_CERT_PATH
            ? read(settings.TEMPORAL_TLS_SERVER_CA_CERT_PATH, 'TEMPORAL_TLS_SERVER_CA_CERT_PATH')
            : undefined,
          clientCertPair: mtls
            ? {
                crt: read(settings.TEMPORAL_TLS_CLIENT_CERT_PATH!, 'TEMPORAL_TLS_CLIENT_CERT_PATH'),
                key: read(settings.TEMPORAL_TLS_CLIENT_KEY_PATH!, 'TEMPORAL_TLS_CLIENT_KEY_PATH'),
              }
            : undefined,
        }
      : false,
  };
}

/** An API key file's key: its text without surrounding whitespace, never empty. */
export function apiKeyOf(contents: Buffer, what: string): string {
  const key = contents.toString('utf8').trim();
  if (!key) throw new Error(`${what} holds no API key`);
  return key;
}

/** The runner's settings, when an image is set (without one, no ansible can run). */
export function runnerSettings(settings: Settings): RunnerSettings | undefined {
  if (!settings.HOSTFLOW_RUNNER_IMAGE) return undefined;
  const selector = settings.HOSTFLOW_RUNNER_NODE_SELECTOR;
  return {
    ...DEFAULT_RUNNER_SETTINGS,
    namespace: settings.HOSTFLOW_RUNNER_NAMESPACE,
    image: settings.HOSTFLOW_RUNNER_IMAGE,
    ...(selector.length
      ? { nodeSelector: Object.fromEntries(selector.map((entry) => entry.split('=', 2))) }
      : {}),
    resources: {
      ...DEFAULT_RUNNER_SETTINGS.resources,
      cpuLimit: settings.HOSTFLOW_RUNNER_CPU_LIMIT,
      memoryLimit: settings.HOSTFLOW_RUNNER_MEMORY_LIMIT,
      ephemeralStorageLimit: settings.HOSTFLOW_RUNNER_EPHEMERAL_STORAGE_LIMIT,
    },
    deadlineSeconds: settings.HOSTFLOW_RUNNER_DEADLINE_SECONDS,
    maxLogBytes: settings.HOSTFLOW_RUNNER_MAX_LOG_BYTES,
    ansibleCore: settings.HOSTFLOW_RUNNER_ANSIBLE_CORE,
    mirrors: settings.HOSTFLOW_RUNNER_MIRRORS,
  };
}

export function kubeConfig(settings: Settings): KubeConfig {
  const kc = loadKubeConfig(settings.KUBECONFIG, settings.HOSTFLOW_KUBE_CONTEXT, {
    context: 'HOSTFLOW_KUBE_CONTEXT',
    file: 'KUBECONFIG',
  });
  return shareConnections(kc);
}

/** Where client-node's loadFromDefault looks: $KUBECONFIG, ~/.kube/config, or in-cluster. */
function defaultKubeConfigExists(): boolean {
  return (
    Boolean(process.env.KUBECONFIG) ||
    existsSync(join(homedir(), '.kube', 'config')) ||
    Boolean(process.env.KUBERNETES_SERVICE_HOST)
  );
}

/**
 * The kubeconfig at `file` (else the default one) at `context` (else its current one); errors
 * name the setting or flag (`names`) that chose them.
 */
export function loadKubeConfig(
  file: string | undefined,
  context: string | undefined,
  names: { context: string; file: string },
): KubeConfig {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else if (!defaultKubeConfigExists()) {
    // client-node would fall back to http://localhost:8080 and fail later, confusingly.
    throw new Error(
      `no kubeconfig: set ${names.file} (none at ~/.kube/config, and not running in a cluster)`,
    );
  } else kc.loadFromDefault();
  if (context) {
    if (!kc.getContextObject(context)) {
      const known =
        kc
          .getContexts()
          .map((c) => c.name)
          .join(', ') || 'none';
      throw new Error(
        `${names.context}: context "${context}" is not in the kubeconfig (contexts: ${known})`,
      );
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) {
    throw new Error(`no Kubernetes cluster configured: set ${names.file} (and ${names.context})`);
  }
  return kc;
}
