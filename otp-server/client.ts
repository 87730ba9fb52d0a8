// The worker's side of the OTP service: hand over a build user's private key, get back the
// one-time token the build will redeem. Neither the key nor the token is ever logged or put in
// an error message (errors may end up in workflow history).
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { TOKEN_PATTERN } from './store.js';

export interface OtpClientOptions {
  /** Base URL of the service, e.g. https://otp.hostflow.svc:8443 */
  url: string;
  /** PEM of the CA that signs the service's certificate (the `otp-ca` the build gets too). */
  ca: string | Buffer;
  /** Bearer token for the store endpoint. */
  storeToken: string;
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

export class OtpClient {
  /** What the build's `otp-server` key holds: the redeem endpoint. */
  readonly redeemUrl: string;
  private readonly storeUrl: URL;
  private readonly agent: Agent;

  constructor(private readonly options: OtpClientOptions) {
    const base = options.url.replace(/\/+$/, '');
    this.redeemUrl = `${base}/otp`;
    this.storeUrl = new URL(`${base}/store`);
    if (this.storeUrl.protocol !== 'https:') throw new Error(`OTP service URL must be https`);
    this.agent = new Agent({ keepAlive: true, ca: options.ca });
  }

  static fromFiles(files: {
    url: string;
    caFile: string;
    storeTokenFile: string;
    timeoutMs?: number;
  }): OtpClient {
    const read = (path: string) => {
      try {
        return readFileSync(path);
      } catch (err) {
        throw new Error(`cannot read ${path}: ${(err as Error).message}`);
      }
    };
    return new OtpClient({
      url: files.url,
      ca: read(files.caFile),
      storeToken: read(files.storeTokenFile).toString('utf8').trim(),
      timeoutMs: files.timeoutMs,
    });
  }

  /** Stores `privateKey`; resolves to the OTP that redeems it once. */
  async storeKey(privateKey: string): Promise<string> {
    const { status, body } = await this.post(privateKey);
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
    const retryable = status >= 500 || status === 408 || status === 429;
    throw new OtpClientError(
      `OTP service refused to store the key: HTTP ${status} (${reason})`,
      status,
      retryable,
    );
  }

  /** Frees the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  private post(body: string): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = request(
        this.storeUrl,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            Authorization: `Bearer ${this.options.storeToken}`,
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

function transportError(err: Error): OtpClientError {
  const code = (err as NodeJS.ErrnoException).code;
  return new OtpClientError(
    `OTP service unreachable: ${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`,
    undefined,
    true,
  );
}
