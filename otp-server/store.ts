// Where issued keys wait for their one redemption. The Kubernetes store keeps one Secret per
// OTP in a namespace of its own (not the engine's, which holds admin keys), so records survive
// restarts and are shared by every replica: the name is a hash of the token (the token itself is never stored), the data is the key
// sealed at rest, and redemption is a delete with uid + resourceVersion preconditions, which
// the API server grants to exactly one caller.
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { createHash, randomBytes } from 'node:crypto';
import type { Sealer } from './sealing.js';
import { statusCode, transportFailure } from '../shared/kube-errors.js';
import { TOKEN_PATTERN } from '../shared/otp-token.js';

export { TOKEN_PATTERN };

export interface OtpStore {
  /** Stores `privateKey` until `expiresAt`; returns the new one-time token. */
  issue(privateKey: Buffer, expiresAt: Date): Promise<string>;
  /** The key, to exactly one caller per token; undefined if unknown, used or expired. */
  redeem(token: string, now?: Date): Promise<Buffer | undefined>;
  /** Deletes expired records; returns how many. */
  sweep(now?: Date): Promise<number>;
  /** Throws when the store cannot be reached. */
  ready(): Promise<void>;
}

const newToken = (): string => randomBytes(32).toString('base64url');

export const OTP_LABEL = { 'app.kubernetes.io/managed-by': 'hostflow-otp' } as const;
export const EXPIRES_ANNOTATION = 'hostflow.dev/otp-expires-at';
const SECRET_TYPE = 'hostflow.dev/otp';
const DATA_KEY = 'sealed-key';
const SELECTOR = Object.entries(OTP_LABEL)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/** `otp-` + hex SHA-256 of the token: 68 characters, a valid Secret name. */
export function recordName(token: string): string {
  return `otp-${createHash('sha256').update(token).digest('hex')}`;
}

function expiry(secret: V1Secret): number {
  const value = secret.metadata?.annotations?.[EXPIRES_ANNOTATION];
  const at = value ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? 0 : at; // unreadable expiry: treat as expired
}

export class KubeOtpStore implements OtpStore {
  constructor(
    private readonly core: CoreV1Api,
    private readonly namespace: string,
    private readonly sealer: Sealer,
  ) {}

  async issue(privateKey: Buffer, expiresAt: Date): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const token = newToken();
      const name = recordName(token);
      try {
        await this.core.createNamespacedSecret({
          namespace: this.namespace,
          body: {
            metadata: {
              name,
              labels: { ...OTP_LABEL },
              annotations: { [EXPIRES_ANNOTATION]: expiresAt.toISOString() },
            },
            type: SECRET_TYPE,
            immutable: true,
            data: { [DATA_KEY]: this.sealer.seal(name, privateKey).toString('base64') },
          },
        });
        return token;
      } catch (err) {
        // A name collision means a duplicate random token: draw another (never in practice).
        if (statusCode(err) !== 409 || attempt >= 2) throw err;
      }
    }
  }

  async redeem(token: string, now = new Date()): Promise<Buffer | undefined> {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const name = recordName(token);
    let secret: V1Secret;
    try {
      secret = await this.core.readNamespacedSecret({ name, namespace: this.namespace });
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
    if (expiry(secret) <= now.getTime()) return undefined; // the sweeper deletes it
    const { uid, resourceVersion } = secret.metadata ?? {};
    try {
      await this.core.deleteNamespacedSecret({
        name,
        namespace: this.namespace,
        body: { preconditions: { uid, resourceVersion } },
      });
    } catch (err) {
      const code = statusCode(err);
      if (code === 404 || code === 409) return undefined; // another redemption won
      throw err;
    }
    const sealed = secret.data?.[DATA_KEY];
    if (!sealed) throw new Error(`${name}: record has no ${DATA_KEY}`);
    return this.sealer.open(name, Buffer.from(sealed, 'base64'));
  }

  async sweep(now = new Date()): Promise<number> {
    let swept = 0;
    let next: string | undefined;
    do {
      const page = await this.core.listNamespacedSecret({
        namespace: this.namespace,
        labelSelector: SELECTOR,
        limit: 500,
        _continue: next,
      });
      for (const secret of page.items) {
        if (expiry(secret) > now.getTime()) continue;
        const { name, uid, resourceVersion } = secret.metadata ?? {};
        try {
          await this.core.deleteNamespacedSecret({
            name: name!,
            namespace: this.namespace,
            body: { preconditions: { uid, resourceVersion } },
          });
          swept++;
        } catch (err) {
          const code = statusCode(err);
          if (code !== 404 && code !== 409) throw err; // 404/409: redeemed or swept meanwhile
        }
      }
      next = page.metadata?._continue || undefined;
    } while (next);
    return swept;
  }

  async ready(): Promise<void> {
    await this.core.listNamespacedSecret({
      namespace: this.namespace,
      labelSelector: SELECTOR,
      limit: 1,
    });
  }
}

/** An error's gist for logs, without bodies: Kubernetes API errors carry the whole response. */
export function errorGist(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  const body = (err as { body?: unknown })?.body;
  if (typeof code === 'number') {
    let message = '';
    try {
      message = (JSON.parse(String(body)) as { message?: string }).message ?? '';
    } catch {
      // not a Status
    }
    return `Kubernetes API HTTP ${code}${message ? `: ${message}` : ''}`;
  }
  const transport = transportFailure(err);
  if (transport) return `Kubernetes API unreachable: ${transport}`;
  return err instanceof Error ? err.message : String(err);
}
