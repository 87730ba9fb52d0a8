// Runs the OTP service exactly as deployed (`node dist/otp-server/main.js`, settings in the
// environment) against the test kube-apiserver, with its own CA, certificate, store token and
// sealing key in a temp dir, and records in a namespace of its own.
import type { V1Secret } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCa, ensureCert, type LocalCa } from '../../local-stack/pki.js';
import { REPO_ROOT } from '../../local-stack/paths.js';
import { freePort } from '../../local-stack/ports.js';
import { spawnManaged, waitFor, type ManagedProcess } from '../../local-stack/process.js';
import { OTP_LABEL } from '../../otp-server/store.js';
import { kube, testEnv, uniqueSuffix } from './env.js';
import { generateEd25519KeyPair } from '../../activities/ssh/keys.js';

export interface OtpFixture {
  dir: string;
  namespace: string;
  ca: LocalCa;
  caPem: string;
  /** The files the server is configured with (the TLS pair is replaced to rotate it). */
  certFile: string;
  keyFile: string;
  storeToken: string;
  storeTokenFile: string;
  sealingKeyFile: string;
  kube: ReturnType<typeof kube>;
  /** Issues a fresh server certificate (new key, new serial) and installs it. */
  rotateCertificate(steps?: { between?: () => Promise<void> }): Promise<void>;
  start(name: string, env?: NodeJS.ProcessEnv, port?: number): Promise<OtpProcess>;
  /** The OTP Secrets in the namespace. */
  records(): Promise<V1Secret[]>;
  /** Every log file the fixture's processes wrote. */
  logFiles: string[];
  dispose(): Promise<void>;
}

export interface OtpProcess extends ManagedProcess {
  port: number;
  /** Base URL; the redeem endpoint is `${url}/otp`. */
  url: string;
  redeemUrl: string;
}

export async function createOtpFixture(prefix = 'otp'): Promise<OtpFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'hostflow-otp-'));
  const ca = await ensureCa(join(dir, 'pki'), 'hostflow OTP test CA');
  let generation = 0;
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  const install = () => ensureCert(ca, `otp-${generation++}`, { cn: 'otp', ips: ['127.0.0.1'] });
  const first = await install();
  copyFileSync(first.cert, certFile);
  copyFileSync(first.key, keyFile);

  const storeToken = randomBytes(24).toString('base64url');
  const storeTokenFile = join(dir, 'store-token');
  writeFileSync(storeTokenFile, `${storeToken}\n`, { mode: 0o600 });
  const sealingKeyFile = join(dir, 'sealing-key');
  writeFileSync(sealingKeyFile, randomBytes(32).toString('base64'), { mode: 0o600 });

  const namespace = `${prefix}-${uniqueSuffix()}`;
  const k = kube();
  await k.core.createNamespace({ body: { metadata: { name: namespace } } });
  const processes: ManagedProcess[] = [];
  const logFiles: string[] = [];
  const selector = Object.entries(OTP_LABEL)
    .map(([key, v]) => `${key}=${v}`)
    .join(',');

  const fixture: OtpFixture = {
    dir,
    namespace,
    ca,
    caPem: ca.certPem(),
    certFile,
    keyFile,
    storeToken,
    storeTokenFile,
    sealingKeyFile,
    kube: k,
    logFiles,
    async rotateCertificate(steps = {}) {
      const next = await install();
      // Like a mounted Secret's update: each file replaced atomically, one after the other.
      copyFileSync(next.cert, `${certFile}.new`);
      renameSync(`${certFile}.new`, certFile);
      await steps.between?.();
      copyFileSync(next.key, `${keyFile}.new`);
      renameSync(`${keyFile}.new`, keyFile);
    },
    async start(name, env = {}, port) {
      const listen = port ?? (await freePort());
      const logFile = join(testEnv('stateDir'), 'logs', `otp-${namespace}-${name}.log`);
      logFiles.push(logFile);
      const proc = spawnManaged(
        `otp-server ${name}`,
        process.execPath,
        ['--enable-source-maps', join(REPO_ROOT, 'dist/otp-server/main.js')],
        {
          env: {
            ...process.env,
            KUBECONFIG: testEnv('kubeconfig'),
            HOSTFLOW_OTP_NAMESPACE: namespace,
            HOSTFLOW_OTP_LISTEN: `127.0.0.1:${listen}`,
            HOSTFLOW_OTP_TLS_CERT_FILE: certFile,
            HOSTFLOW_OTP_TLS_KEY_FILE: keyFile,
            HOSTFLOW_OTP_STORE_TOKEN_FILE: storeTokenFile,
            HOSTFLOW_OTP_SEALING_KEY_FILE: sealingKeyFile,
            ...env,
          },
          logFile,
        },
      );
      processes.push(proc);
      await waitFor(
        `${proc.name} to listen`,
        () => (proc.tail(50).includes('listening on') ? true : undefined),
        { process: proc },
      );
      const url = `https://127.0.0.1:${listen}`;
      return { ...proc, port: listen, url, redeemUrl: `${url}/otp` };
    },
    async records() {
      const list = await k.core.listNamespacedSecret({ namespace, labelSelector: selector });
      return list.items;
    },
    async dispose() {
      await Promise.all(processes.map((p) => p.stop()));
      await k.core.deleteCollectionNamespacedSecret({ namespace }).catch(() => undefined);
      await k.core.deleteNamespace({ name: namespace }).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}

export interface HttpsReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTPS request on its own connection, trusting `ca`. */
export function httpsRequest(
  url: string,
  options: RequestOptions & { ca: string; body?: string | Buffer; expectContinue?: boolean },
): Promise<HttpsReply> {
  const { body, expectContinue, ...rest } = options;
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, method: 'POST', ...rest }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    if (expectContinue) {
      req.on('continue', () => req.end(body));
      req.flushHeaders();
    } else req.end(body);
  });
}

/** A fresh OpenSSH ed25519 private key, as the worker generates for a build user. */
export function newPrivateKey(): string {
  return generateEd25519KeyPair('build@test').privateKey;
}

/** The build task's own command, run in `dir` (which holds otp, otp-ca and otp-server). */
export function redeemWithCurl(dir: string): Promise<{ exitCode: number; stderr: string }> {
  const command = 'curl --fail --cacert otp-ca -XPOST -d @otp "$(cat otp-server)" > id_rsa';
  return new Promise((resolve) => {
    execFile('bash', ['-c', command], { cwd: dir }, (err, _stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ exitCode: err ? (typeof code === 'number' ? code : -1) : 0, stderr });
    });
  });
}

/** The build task's side of a served TaskRun: its Secret's files, its curl command, the key. */
export async function redeemSecret(secret: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(join(testEnv('stateDir'), 'build-'));
  for (const key of ['otp', 'otp-ca', 'otp-server']) writeFileSync(join(dir, key), secret[key]!);
  const { exitCode, stderr } = await redeemWithCurl(dir);
  if (exitCode !== 0)
    throw new Error(`redeeming the OTP failed (curl exit ${exitCode}): ${stderr}`);
  return readFileSync(join(dir, 'id_rsa'), 'utf8');
}
