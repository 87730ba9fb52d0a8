// hostflow's lock-audit receiver as the local stack runs it: a CA, a serving certificate and a
// bearer token under the state directory (kept across restarts), made before the API server
// starts, since its audit webhook is configured with them; then `node dist/locks/audit-receiver.js`.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LockAuditSink } from './kube-apiserver.js';
import { REPO_ROOT } from './paths.js';
import { ensureCa, ensureCert } from './pki.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';

export interface LockAuditPlan {
  /** What the API server is started with. */
  sink: LockAuditSink;
  port: number;
  tlsCert: string;
  tlsKey: string;
  tokenFile: string;
}

/** Makes the CA, certificate and token once; the port is fixed for `npm start`, free otherwise. */
export async function planLockAudit(stateDir: string, port?: number): Promise<LockAuditPlan> {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const ca = await ensureCa(join(stateDir, 'pki'), 'hostflow lock-audit CA');
  const cert = await ensureCert(ca, 'lock-audit', {
    cn: 'hostflow-lock-audit',
    ips: ['127.0.0.1'],
  });
  const tokenFile = join(stateDir, 'token');
  if (!existsSync(tokenFile)) {
    writeFileSync(tokenFile, randomBytes(32).toString('base64url'), { mode: 0o600 });
  }
  const chosen = port ?? (await freePort());
  return {
    sink: {
      url: `https://127.0.0.1:${chosen}/audit`,
      token: readFileSync(tokenFile, 'utf8').trim(),
      caFile: ca.cert,
    },
    port: chosen,
    tlsCert: cert.cert,
    tlsKey: cert.key,
    tokenFile,
  };
}

export interface LockAuditOptions {
  kubeconfig: string;
  metricsAddress?: string;
  resyncSeconds?: number;
  logFile?: string;
  restart?: boolean;
  /** Each line of its output as it comes (`hostflow start` shows them). */
  echo?: (line: string) => void;
}

export interface LockAudit {
  process: ManagedProcess;
  stop(): Promise<void>;
}

export async function startLockAudit(
  plan: LockAuditPlan,
  options: LockAuditOptions,
): Promise<LockAudit> {
  const proc = spawnManaged(
    'lock-audit',
    process.execPath,
    ['--enable-source-maps', join(REPO_ROOT, 'dist/locks/audit-receiver.js')],
    {
      env: {
        ...process.env,
        KUBECONFIG: options.kubeconfig,
        HOSTFLOW_LOCK_AUDIT_LISTEN: `127.0.0.1:${plan.port}`,
        HOSTFLOW_LOCK_AUDIT_TLS_CERT_FILE: plan.tlsCert,
        HOSTFLOW_LOCK_AUDIT_TLS_KEY_FILE: plan.tlsKey,
        HOSTFLOW_LOCK_AUDIT_TOKEN_FILE: plan.tokenFile,
        ...(options.metricsAddress ? { HOSTFLOW_METRICS_ADDRESS: options.metricsAddress } : {}),
        ...(options.resyncSeconds
          ? { HOSTFLOW_RESYNC_SECONDS: String(options.resyncSeconds) }
          : {}),
      },
      logFile: options.logFile,
      restart: options.restart,
      echo: options.echo,
    },
  );
  await waitFor(
    'lock-audit to listen',
    () => (proc.tail(50).includes('receiving audit events') ? true : undefined),
    { process: proc },
  );
  return { process: proc, stop: () => proc.stop() };
}
