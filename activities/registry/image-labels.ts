// Reads an OS image's labels from its registry, through the OCI distribution API (the manifest,
// an index resolved to linux/amd64, then the config blob), for a rollout's preflight. Only the
// registries the engine is told about are asked (HOSTFLOW_IMAGE_REGISTRIES); anonymous pulls,
// with the token handshake registries such as quay.io use for public repositories.
import { ApplicationFailure } from '@temporalio/common';
import { parseImageReference } from '../../shared/image-reference.js';

const MANIFEST_TYPES = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');
const TIMEOUT_MS = 15_000;

export type ImageLookup =
  | { checked: false; why: string }
  | { checked: true; found: false; why: string }
  | { checked: true; found: true; digest: string; labels: Record<string, string> };

interface Manifest {
  mediaType?: string;
  config?: { digest: string };
  manifests?: Array<{ digest: string; platform?: { os?: string; architecture?: string } }>;
}

/** `registries`: base URLs such as `http://127.0.0.1:5000` or `https://quay.io`. */
export function createImageLabelActivities(deps: { registries: string[] }) {
  const bases = new Map(
    deps.registries.map((url) => {
      const u = new URL(url);
      return [u.host, `${u.protocol}//${u.host}`] as const;
    }),
  );

  return {
    async inspectOsImage(input: { image: string }): Promise<ImageLookup> {
      const ref = parseImageReference(input.image);
      if ('error' in ref) return { checked: true, found: false, why: ref.error };
      const base = bases.get(ref.registry);
      if (!base)
        return {
          checked: false,
          why: `registry ${ref.registry} is not in HOSTFLOW_IMAGE_REGISTRIES`,
        };
      const get = pull(base, ref.repository);
      const reference = ref.digest ?? ref.tag ?? 'latest';
      let response = await get(`manifests/${reference}`, MANIFEST_TYPES);
      if (response.status === 404) {
        return {
          checked: true,
          found: false,
          why: `${input.image} is not on ${ref.registry} (404)`,
        };
      }
      let manifest = (await response.json()) as Manifest;
      const digest = response.headers.get('docker-content-digest') ?? reference;
      if (manifest.manifests) {
        const chosen =
          manifest.manifests.find(
            (m) => m.platform?.os === 'linux' && m.platform.architecture === 'amd64',
          ) ?? manifest.manifests[0];
        if (!chosen)
          return { checked: true, found: false, why: `${input.image} is an empty index` };
        response = await get(`manifests/${chosen.digest}`, MANIFEST_TYPES);
        manifest = (await response.json()) as Manifest;
      }
      if (!manifest.config)
        return { checked: true, found: false, why: `${input.image} has no image config` };
      const config = (await (await get(`blobs/${manifest.config.digest}`, '*/*')).json()) as {
        config?: { Labels?: Record<string, string> };
      };
      return { checked: true, found: true, digest, labels: config.config?.Labels ?? {} };
    },
  };
}

/** GETs under /v2/<repository>/, answering a Bearer challenge with an anonymous pull token. */
function pull(base: string, repository: string) {
  let token: string | undefined;
  return async (path: string, accept: string): Promise<Response> => {
    const url = `${base}/v2/${repository}/${path}`;
    const ask = () =>
      fetch(url, {
        headers: { accept, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      }).catch((err: unknown) => {
        throw ApplicationFailure.retryable(
          `registry ${base} did not answer: ${(err as Error).message}`,
          'RegistryUnavailable',
        );
      });
    let response = await ask();
    const challenge = response.headers.get('www-authenticate');
    if (response.status === 401 && challenge?.startsWith('Bearer ') && !token) {
      token = await anonymousToken(challenge, repository);
      response = await ask();
    }
    if (response.status === 404 || response.ok) return response;
    throw ApplicationFailure.retryable(
      `registry ${base}: GET ${path}: HTTP ${response.status}`,
      'RegistryError',
    );
  };
}

async function anonymousToken(challenge: string, repository: string): Promise<string> {
  const params = Object.fromEntries(
    [...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
  );
  const url = new URL(params.realm ?? '');
  if (params.service) url.searchParams.set('service', params.service);
  url.searchParams.set('scope', params.scope ?? `repository:${repository}:pull`);
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (!response.ok)
    throw ApplicationFailure.retryable(
      `token from ${url.host}: HTTP ${response.status}`,
      'RegistryError',
    );
  const body = (await response.json()) as { token?: string; access_token?: string };
  return body.token ?? body.access_token ?? '';
}

export type ImageLabelActivities = ReturnType<typeof createImageLabelActivities>;
