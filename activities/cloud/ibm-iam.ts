// IBM Cloud IAM and the authenticated HTTP client both IBM adapters (ibmz, ibmp) share.
// An API key is exchanged for a bearer token (POST https://iam.cloud.ibm.com/identity/token,
// form body grant_type=urn:ibm:params:oauth:grant-type:apikey&apikey=…; IBM Cloud docs,
// "Generating an IBM Cloud IAM token by using an API key"). The token is cached and refreshed
// once 80% of its lifetime has passed (IBM go-sdk-core iamTokenData: refresh at expiration - 20%
// of expires_in), so a call never rides on a token about to lapse. Errors become Temporal
// failures: throttling, 5xx and network trouble retry; rejected credentials and bad requests do not,
// and their message names the host-config key to fix. The key and token never enter a message.
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';

export const IAM_TOKEN_URL = 'https://iam.cloud.ibm.com/identity/token';
const DEFAULT_TIMEOUT_MS = 30_000;
const REFRESH_AT = 0.8;

export interface IamOptions {
  apiKey: string;
  /** The Secret the key came from: named in messages, never its content. */
  secretName: string;
  /** Prefix for config keys in messages, e.g. `dynamic.linux-s390x.`. */
  keyPrefix?: string;
  url?: string;
  timeoutMs?: number;
  /** Clock in ms, injectable for tests of expiry. */
  now?: () => number;
}

export class IamTokenSource {
  readonly #apiKey: string;
  readonly #options: IamOptions;
  #cached?: { token: string; refreshAt: number };
  #inflight?: Promise<string>;

  constructor(options: IamOptions) {
    // Secrets often end in a newline; IAM would reject the key with it.
    this.#apiKey = options.apiKey.trim();
    this.#options = { ...options, apiKey: '' };
  }

  /** How messages name the key's source: the Secret and the host-config key that names it. */
  get source(): string {
    return `Secret "${this.#options.secretName}" (${this.#options.keyPrefix ?? ''}secret)`;
  }

  /** A valid bearer token; concurrent callers share one exchange. */
  async token(): Promise<string> {
    const now = this.#options.now ?? Date.now;
    if (this.#cached && now() < this.#cached.refreshAt) return this.#cached.token;
    this.#inflight ??= this.#exchange(now).finally(() => (this.#inflight = undefined));
    return this.#inflight;
  }

  /** Drops the cached token (after the API answered 401 to it). */
  invalidate(): void {
    this.#cached = undefined;
  }

  /** Removes the key and any token from text that may echo them. */
  redact(text: string): string {
    let out = this.#apiKey ? text.split(this.#apiKey).join('[redacted]') : text;
    if (this.#cached) out = out.split(this.#cached.token).join('[redacted]');
    return out;
  }

  async #exchange(now: () => number): Promise<string> {
    const { url = IAM_TOKEN_URL, timeoutMs = DEFAULT_TIMEOUT_MS } = this.#options;
    const issuedAt = now();
    const response = await send('IBM Cloud IAM token exchange', url, timeoutMs, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'urn:ibm:params:oauth:grant-type:apikey',
        apikey: this.#apiKey,
      }).toString(),
    });
    const text = await response.text();
    const body = parseJson(text) as {
      access_token?: string;
      expires_in?: number;
      errorCode?: string;
      errorMessage?: string;
    };
    if (response.status === 400 || response.status === 401) {
      const detail = this.redact(
        `${body.errorCode ?? response.status}: ${body.errorMessage ?? text.slice(0, 200)}`,
      );
      throw ApplicationFailure.nonRetryable(
        `the api-key in ${this.source} was rejected by IBM Cloud IAM (${detail}); ` +
          'store a valid service ID API key under api-key',
        'IbmIamRejected',
      );
    }
    if (!response.ok || !body.access_token) {
      const detail = this.redact(body.errorMessage ?? text.slice(0, 200));
      const retryAfter = response.headers.get('retry-after');
      throw failure(
        `IBM Cloud IAM token exchange: HTTP ${response.status}: ${detail}`,
        response.status,
        retryAfter,
      );
    }
    const lifetimeMs = (body.expires_in ?? 3600) * 1000;
    this.#cached = { token: body.access_token, refreshAt: issuedAt + lifetimeMs * REFRESH_AT };
    return body.access_token;
  }
}

export interface IbmRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  body?: unknown;
  headers?: Record<string, string>;
  /** Statuses returned to the caller instead of thrown (e.g. 404 on describe). */
  accept?: number[];
  /** What to fix when the API rejects the request (4xx other than auth). */
  fix?: (status: number, message: string, body: unknown) => string | undefined;
}

export interface IbmResponse<T> {
  status: number;
  body: T;
}

/** Authenticated JSON calls with explicit timeouts and classified failures. */
export class IbmClient {
  constructor(
    readonly tokens: IamTokenSource,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {}

  async request<T>(action: string, url: string, request: IbmRequest = {}): Promise<IbmResponse<T>> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.tokens.token();
      const response = await send(action, url, this.timeoutMs, {
        method: request.method ?? 'GET',
        headers: {
          Accept: 'application/json',
          Authorization: `Bearer ${token}`,
          ...(request.body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...request.headers,
        },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
      });
      const text = await response.text();
      const body = parseJson(text);
      // A token can be revoked or expire early: one fresh exchange before calling the key bad.
      if (response.status === 401 && attempt === 0) {
        this.tokens.invalidate();
        continue;
      }
      if (response.ok || request.accept?.includes(response.status)) {
        return { status: response.status, body: body as T };
      }
      throw this.error(
        action,
        response.status,
        body,
        text,
        request.fix,
        response.headers.get('retry-after'),
      );
    }
  }

  /** The classified failure for an HTTP error answer. */
  error(
    action: string,
    status: number,
    body: unknown,
    text = '',
    fix?: IbmRequest['fix'],
    retryAfter?: string | null,
  ): ApplicationFailure {
    const message = this.tokens.redact(apiMessage(body, text));
    const secret = this.tokens.source;
    if (status === 401) {
      return ApplicationFailure.nonRetryable(
        `${action}: IBM Cloud rejected the token for the api-key in ${secret} (401: ${message})`,
        'IbmHttp401',
      );
    }
    if (status === 403) {
      return ApplicationFailure.nonRetryable(
        `${action}: the api-key in ${secret} lacks permission (403: ${message}); grant its service ID access`,
        'IbmHttp403',
      );
    }
    const hint = isClientError(status) ? fix?.(status, message, body) : undefined;
    return failure(
      `${action}: HTTP ${status}: ${message}${hint ? `; ${hint}` : ''}`,
      status,
      retryAfter,
    );
  }
}

/**
 * A deterministic instance name from the owner tag and the idempotency key, so a retried launch
 * finds its instance by name. The original named instances `<instance-tag>-<random>` and counted
 * ownership by that name prefix (multi-platform-controller pkg/ibm/ibmz.go, ibmp.go:
 * `strings.HasPrefix(*instance.Name, instanceTag)`); hostflow keeps the prefix, hashes the key.
 */
export function instanceName(
  tag: string,
  idempotencyKey: string,
  maxLength: number,
  tagKey: string,
): string {
  if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(tag)) {
    throw ApplicationFailure.nonRetryable(
      `${tagKey} "${tag.slice(0, 80)}" cannot start an IBM instance name; ` +
        'use lowercase letters, digits and "-", starting with a letter',
      'IbmInvalidInstanceTag',
    );
  }
  const room = Math.min(16, maxLength - tag.length - 1);
  if (room < 8) {
    throw ApplicationFailure.nonRetryable(
      `${tagKey} "${tag}" is too long for an IBM instance name (at most ${maxLength - 9} characters)`,
      'IbmInvalidInstanceTag',
    );
  }
  return `${tag}-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, room)}`;
}

/**
 * Whether `name` is one `instanceName` made for this owner tag: the tag, a dash, and exactly the
 * hash it appends. A prefix match would also take the VMs of a tag that starts the same
 * (`team` would take `team-b-…`).
 */
export function isInstanceNameOf(tag: string, name: string, maxLength: number): boolean {
  const room = Math.min(16, maxLength - tag.length - 1);
  const hash = name.slice(tag.length + 1);
  return name.startsWith(`${tag}-`) && hash.length === room && /^[0-9a-f]+$/.test(hash);
}

/** The owner tag value an instance name carries (the part before the final hash). */
export function ownerOfName(name: string): string {
  const dash = name.lastIndexOf('-');
  return dash > 0 ? name.slice(0, dash) : name;
}

async function send(
  action: string,
  url: string,
  timeoutMs: number,
  init: RequestInit,
): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const host = new URL(url).host;
    const name = (err as Error)?.name;
    const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
    const reason =
      name === 'TimeoutError'
        ? `no answer from ${host} within ${timeoutMs} ms`
        : `could not reach ${host}: ${cause?.code ?? cause?.message ?? (err as Error)?.message}`;
    throw ApplicationFailure.retryable(`${action}: ${reason}`, 'IbmUnavailable');
  }
}

const isClientError = (status: number) => status >= 400 && status < 500;

/** Throttling, conflicts (a state still changing) and server errors retry; other 4xx do not. */
function failure(message: string, status: number, retryAfter?: string | null) {
  const retry = status === 408 || status === 409 || status === 429 || !isClientError(status);
  const seconds = Number(retryAfter);
  return ApplicationFailure.create({
    message,
    type: `IbmHttp${status}`,
    nonRetryable: !retry,
    ...(retry && seconds > 0 ? { nextRetryDelay: `${Math.min(seconds, 300)}s` } : {}),
  });
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return {};
  }
}

/** VPC errors: {errors: [{code, message, target}]}; Power VS: {description, error}. */
function apiMessage(body: unknown, text: string): string {
  const b = body as {
    errors?: { code?: string; message?: string }[];
    description?: string;
    error?: string;
  };
  if (b?.errors?.length)
    return b.errors.map((e) => `${e.code ?? 'error'}: ${e.message ?? ''}`).join('; ');
  if (b?.description || b?.error) return [b.error, b.description].filter(Boolean).join(': ');
  return text.slice(0, 200) || 'no details';
}

/** What both IBM providers are built from; `config` is the provider's own. */
export interface IbmProviderOptions<C extends { secret: string; url: string }> {
  config: C;
  apiKey: string;
  /** e.g. `dynamic.linux-s390x.`, so messages name the full host-config key. */
  keyPrefix?: string;
  /** Overrides `config.url` (tests point it at the double). */
  url?: string;
  iamUrl?: string;
  timeoutMs?: number;
  /** Share one token cache between providers using the same key. */
  tokens?: IamTokenSource;
}

/** The API base URL and an authenticated client for an IBM provider. */
export function ibmConnection<C extends { secret: string; url: string }>(
  options: IbmProviderOptions<C>,
): { base: string; prefix: string; client: IbmClient } {
  const prefix = options.keyPrefix ?? '';
  const tokens =
    options.tokens ??
    new IamTokenSource({
      apiKey: options.apiKey,
      secretName: options.config.secret,
      keyPrefix: prefix,
      url: options.iamUrl,
      timeoutMs: options.timeoutMs,
    });
  return {
    base: (options.url ?? options.config.url).replace(/\/+$/, ''),
    prefix,
    client: new IbmClient(tokens, options.timeoutMs),
  };
}
