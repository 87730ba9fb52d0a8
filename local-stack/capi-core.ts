// Cluster API core, the real neighbour of hostflow's Machine family: its manager, built from the
// Go module proxy (capi-core/build.sh), run against a local API server as its admin, with CAPI's
// own CRDs and webhooks as the release ships them. In a cluster the API server reaches the
// webhooks through a Service; here the manager serves them on a loopback port with a certificate
// of a local CA, and the CRDs' conversion and the webhook configurations name them by URL.
import {
  AdmissionregistrationV1Api,
  loadAllYaml,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
  type V1MutatingWebhookConfiguration,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { installCrdObject } from './cluster-setup.js';
import { ensureCa, ensureCert } from './pki.js';
import { REPO_ROOT } from './paths.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';
import { upsert } from './upsert.js';
import { runBuildScript } from './build-script.js';

/** Builds it the first time (5-10 minutes) and returns the folder of manager, crds/, webhooks.yaml. */
export async function ensureCapiCore(): Promise<string> {
  const [dir] = await runBuildScript('Cluster API core', 'local-stack/capi-core/build.sh');
  return dir!;
}

export interface CapiCoreOptions {
  kc: KubeConfig;
  kubeconfigPath: string;
  /** Where its webhook CA and certificate are kept. */
  stateDir: string;
  logFile: string;
}

/** Installs CAPI's CRDs and webhooks, starts the manager, and waits until it is ready. */
export async function startCapiCore(options: CapiCoreOptions): Promise<ManagedProcess> {
  const dir = await ensureCapiCore();
  const ca = await ensureCa(join(options.stateDir, 'pki'), 'Cluster API webhook CA');
  await ensureCert(ca, 'webhook', { cn: 'capi-webhook', ips: ['127.0.0.1'] });
  const [webhookPort, healthPort, diagnosticsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const endpoint = {
    base: `https://127.0.0.1:${webhookPort}`,
    caBundle: Buffer.from(ca.certPem()).toString('base64'),
  };
  await installCrds(options.kc, dir, endpoint);
  // The stand-ins of the local cluster's own infrastructure and control plane (workload-cluster.ts).
  const standIns = readFileSync(
    join(REPO_ROOT, 'local-stack/capi-core/local-cluster.yaml'),
    'utf8',
  );
  await Promise.all(
    (loadAllYaml(standIns) as V1CustomResourceDefinition[]).map((crd) =>
      installCrdObject(options.kc, crd),
    ),
  );
  await installWebhooks(options.kc, dir, endpoint);
  const manager = spawnManaged(
    'capi-core',
    join(dir, 'manager'),
    [
      `--kubeconfig=${options.kubeconfigPath}`,
      `--webhook-port=${webhookPort}`,
      `--webhook-cert-dir=${ca.dir}`,
      '--webhook-cert-name=webhook.crt',
      '--webhook-key-name=webhook.key',
      `--health-addr=127.0.0.1:${healthPort}`,
      `--diagnostics-address=127.0.0.1:${diagnosticsPort}`,
      '--insecure-diagnostics',
    ],
    { logFile: options.logFile },
  );
  try {
    // Ready once its webhook server serves.
    await waitFor(
      'Cluster API core to be ready',
      async () => {
        const answer = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
        return answer?.ok ? true : undefined;
      },
      { process: manager, timeoutMs: 120_000, intervalMs: 250 },
    );
  } catch (err) {
    await manager.stop();
    throw err;
  }
  return manager;
}

interface Endpoint {
  base: string;
  caBundle: string;
}

/** CAPI's CRDs, each converting its versions through the manager's /convert. */
async function installCrds(kc: KubeConfig, dir: string, endpoint: Endpoint): Promise<void> {
  const files = readdirSync(join(dir, 'crds')).filter((file) => file.endsWith('.yaml'));
  // Together: each waits until the API server serves it.
  await Promise.all(
    files.map((file) => {
      const text = readFileSync(join(dir, 'crds', file), 'utf8');
      const crd = loadYaml<V1CustomResourceDefinition>(text);
      crd.spec.conversion = {
        strategy: 'Webhook',
        webhook: {
          conversionReviewVersions: ['v1'],
          clientConfig: { url: `${endpoint.base}/convert`, caBundle: endpoint.caBundle },
        },
      };
      return installCrdObject(kc, crd);
    }),
  );
}

/** CAPI's defaulting and validating webhooks, named `capi-…` as its release names them. */
async function installWebhooks(kc: KubeConfig, dir: string, endpoint: Endpoint): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const configs = loadAllYaml(readFileSync(join(dir, 'webhooks.yaml'), 'utf8')) as Array<
    (V1MutatingWebhookConfiguration | V1ValidatingWebhookConfiguration) & { kind: string }
  >;
  for (const config of configs) {
    config.metadata!.name = `capi-${config.metadata!.name}`;
    for (const webhook of config.webhooks ?? []) {
      const path = webhook.clientConfig.service?.path ?? '';
      webhook.clientConfig = { url: `${endpoint.base}${path}`, caBundle: endpoint.caBundle };
    }
    if (config.kind === 'MutatingWebhookConfiguration') {
      await upsert(
        (name) => api.readMutatingWebhookConfiguration({ name }),
        (body) => api.createMutatingWebhookConfiguration({ body }),
        (name, body) => api.replaceMutatingWebhookConfiguration({ name, body }),
        config as V1MutatingWebhookConfiguration,
      );
    } else {
      await upsert(
        (name) => api.readValidatingWebhookConfiguration({ name }),
        (body) => api.createValidatingWebhookConfiguration({ body }),
        (name, body) => api.replaceValidatingWebhookConfiguration({ name, body }),
        config as V1ValidatingWebhookConfiguration,
      );
    }
  }
}
