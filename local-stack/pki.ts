// A small local CA for the stack's TLS endpoints (kube-apiserver, OTP service), via openssl.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CertPaths {
  cert: string;
  key: string;
}

export interface LocalCa extends CertPaths {
  dir: string;
  certPem(): string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT')
      throw new Error('pki: openssl not found; install the openssl package', { cause: err });
    throw new Error(`pki: openssl ${args[0]} failed: ${e.stderr ?? e.message}`, { cause: err });
  }
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Creates the CA in `dir` once; later calls reuse it, so restarts keep trusting old certs. */
export async function ensureCa(dir: string, name = 'hostflow local CA'): Promise<LocalCa> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = { dir, cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  if (!existsSync(ca.cert) || !existsSync(ca.key)) {
    await openssl(
      [
        'req',
        '-x509',
        ...EC_KEY,
        '-keyout',
        'ca.key',
        '-out',
        'ca.crt',
        '-days',
        '3650',
        '-subj',
        `/CN=${name}`,
      ],
      dir,
    );
  }
  return { ...ca, certPem: () => readFileSync(ca.cert, 'utf8') };
}

/** Issues (once) a certificate for a server or client, signed by `ca`. */
export async function ensureCert(
  ca: LocalCa,
  file: string,
  subject: { cn: string; o?: string; ips?: string[]; dns?: string[]; client?: boolean },
): Promise<CertPaths> {
  const paths = { cert: join(ca.dir, `${file}.crt`), key: join(ca.dir, `${file}.key`) };
  const san = [
    ...(subject.ips ?? []).map((ip) => `IP:${ip}`),
    ...(subject.dns ?? []).map((d) => `DNS:${d}`),
  ];
  const ext =
    [
      san.length ? `subjectAltName=${san.join(',')}` : '',
      `extendedKeyUsage=${subject.client ? 'clientAuth' : 'serverAuth'}`,
    ]
      .filter(Boolean)
      .join('\n') + '\n';
  // Kept while it names the same addresses: a new one (the node's address changed) makes it anew.
  const extFile = join(ca.dir, `${file}.ext`);
  const same = existsSync(extFile) && readFileSync(extFile, 'utf8') === ext;
  if (same && existsSync(paths.cert) && existsSync(paths.key)) return paths;
  writeFileSync(extFile, ext);
  const subj = `/CN=${subject.cn}${subject.o ? `/O=${subject.o}` : ''}`;
  await openssl(
    ['req', ...EC_KEY, '-keyout', `${file}.key`, '-out', `${file}.csr`, '-subj', subj],
    ca.dir,
  );
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${file}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${file}.crt`,
      '-days',
      '3650',
      '-extfile',
      `${file}.ext`,
    ],
    ca.dir,
  );
  return paths;
}
