// The worker's side of the OTP service: hand over a build user's private key, get back the
// one-time token the build will redeem. Neither the key nor the token is ever logged or put in
// an error message (errors may end up in workflow history).
//
// The store token and the CA may rotate while the worker runs (the service reloads its own
// files): a client made from files re-reads them whenever they change, and once more when the
// service refuses its token, so a rotation never fails a delivery.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { fileSignature } from '../runtime/watched-files.js';
import { TOKEN_PATTERN } from '../shared/otp-token.js';

export interface OtpCredentials {
  /** PEM of the CA that signs the service's certificate (the `otp-ca` the build gets too). */
  ca: string | Buffer;
  /** Bearer token for the store endpoint. */
  storeToken: string;
}

export interface OtpClientOptions extends OtpCredentials {
  /** Base URL of the service, e.g. https://otp.hostflow.svc:8443 */
  url: string;
  timeoutMs?: number;
}

export class OtpClientError extends Error {
  constructor(
    message: string,
    /** HTTP status, when the service answered. */
    readonly status: number | undefined,
    /** False when retrying the same request cannot succeed (bad token, rejected key). */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'OtpClientError';
  }
}

const MAX_RESPONSE_BYTES = 4096;

/** Where credentials come from: fixed, or files read again when they change. */
type CredentialSource = (force: boolean) => OtpCredentials;

export class OtpClient {
  /** What the build's `otp-server` key holds: the redeem endpoint. */
  readonly redeemUrl: string;
  private readonly storeUrl: URL;
  private readonly source: CredentialSource;
  private current?: { credentials: OtpCredentials; agent: Agent };

  constructor(
    private readonly options: Omit<OtpClientOptions, keyof OtpCredentials> &
      Partial<OtpCredentials>,
    source?: CredentialSource,
  ) {
    const base = options.url.replace(/\/+$/, '');
    this.redeemUrl = `${base}/otp`;
    this.storeUrl = new URL(`${base}/store`);
    if (this.storeUrl.protocol !== 'https:') throw new Error(`OTP service URL must be https`);
    const fixed = { ca: options.ca ?? '', storeToken: options.storeToken ?? '' };
    this.source = source ?? (() => fixed);
    this.credentials(false); // a missing file fails at start, not at the first build
  }

  /** A client whose CA and store token follow their files (rotation needs no restart). */
  static fromFiles(files: {
    url: string;
    caFile: string;
    storeTokenFile: string;
    timeoutMs?: number;
  }): OtpClient {
    const paths = [files.caFile, files.storeTokenFile];
    let seen = '';
    let loaded: OtpCredentials | undefined;
    const source: CredentialSource = (force) => {
      const signature = paths.map(fileSignature).join('|');
      if (loaded && !force && signature === seen) return loaded;
      const [ca, token] = paths.map(readOrExplain);
      loaded = { ca: ca!, storeToken: token!.toString('utf8').trim() };
      seen = signature;
      return loaded;
    };
    return new OtpClient({ url: files.url, timeoutMs: files.timeoutMs }, source);
  }

  /** PEM of the CA the service's certificate is signed by now: what builds get as `otp-ca`. */
  get caPem(): string {
    return this.credentials(false).credentials.ca.toString();
  }

  /** Stores `privateKey`; resolves to the OTP that redeems it once. */
  async storeKey(privateKey: string): Promise<string> {
    let { status, body } = await this.post(privateKey, this.credentials(false));
    if (status === 401 || status === 403) {
      // The token may have rotated since it was read: read the files again and retry once.
      ({ status, body } = await this.post(privateKey, this.credentials(true)));
    }
    const reply = body.toString('utf8').trim();
    if (status === 200 || status === 201) {
      if (!TOKEN_PATTERN.test(reply)) {
        throw new OtpClientError('OTP service answered with a malformed OTP', status, true);
      }
      return reply;
    }
    // Keep only a short first line, and nothing that could be an echo of the key.
    let reason = reply.split('\n')[0]!.slice(0, 120);
    if (!reason || /PRIVATE/.test(reason) || privateKey.includes(reason)) reason = 'no reason';
    // 401/403 too: an operator fixes the token (or it finishes rotating) without any new request.
    const retryable = status >= 500 || [401, 403, 408, 429].includes(status);
    throw new OtpClientError(
      `OTP service refused to store the key: HTTP ${status} (${reason})`,
      status,
      retryable,
    );
  }

  /** Frees the kept-alive connections. */
  close(): void {
    this.current?.agent.destroy();
  }

  private credentials(force: boolean): { credentials: OtpCredentials; agent: Agent } {
    const credentials = this.source(force);
    if (this.current?.credentials !== credentials) {
      this.current?.agent.destroy();
      this.current = { credentials, agent: new Agent({ keepAlive: true, ca: credentials.ca }) };
    }
    return this.current;
  }

  private post(
    body: string,
    { credentials, agent }: { credentials: OtpCredentials; agent: Agent },
  ): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = request(
        this.storeUrl,
        {
          method: 'POST',
          agent,
          headers: {
            Authorization: `Bearer ${credentials.storeToken}`,
            'Content-Type': 'text/plain',
            'Content-Length': Buffer.byteLength(body),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_RESPONSE_BYTES) chunks.push(chunk);
          });
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }),
          );
          res.on('error', (err) => reject(transportError(err)));
        },
      );
      req.setTimeout(this.options.timeoutMs ?? 10_000, () =>
        req.destroy(new Error(`no answer within ${this.options.timeoutMs ?? 10_000} ms`)),
      );
      req.on('error', (err) => reject(transportError(err)));
      req.end(body);
    });
  }
}

function readOrExplain(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
}

function transportError(err: Error): OtpClientError {
  const code = (err as NodeJS.ErrnoException).code;
  return new OtpClientError(
    `OTP service unreachable: ${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`,
    undefined,
    true,
  );
}
