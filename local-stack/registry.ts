// A real OCI registry (CNCF Distribution, built once by deploy/registry/build.sh) on loopback,
// for rollouts' preflight to ask about images: the tests push small images with the labels they
// need (pushImage), and `npm start` serves the demo pool's images from it.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { spawnManaged, waitFor } from './process.js';
import { runBuildScript } from './build-script.js';

export interface Registry {
  /** host:port, as image references name it. */
  host: string;
  /** http://host:port, as HOSTFLOW_IMAGE_REGISTRIES lists it. */
  url: string;
  stop(): Promise<void>;
}

export async function startRegistry(options: {
  stateDir: string;
  logDir?: string;
  port?: number;
  restart?: boolean;
}): Promise<Registry> {
  const [bin] = (await runBuildScript('registry', 'deploy/registry/build.sh')) as [string];
  const port = options.port ?? (await freePort());
  mkdirSync(join(options.stateDir, 'data'), { recursive: true });
  const config = join(options.stateDir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: { level: warn }',
      `storage: { filesystem: { rootdirectory: ${join(options.stateDir, 'data')} }, delete: { enabled: true } }`,
      `http: { addr: 127.0.0.1:${port} }`,
      '',
    ].join('\n'),
  );
  const proc = spawnManaged('registry', bin, ['serve', config], {
    logFile: options.logDir ? join(options.logDir, 'registry.log') : undefined,
    restart: options.restart,
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      'the registry to answer /v2/',
      async () => ((await fetch(`${url}/v2/`)).ok ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        process: proc,
      },
    );
  } catch (err) {
    await proc.stop();
    throw new Error(`registry: could not start: ${(err as Error).message}`, { cause: err });
  }
  return { host: `127.0.0.1:${port}`, url, stop: () => proc.stop() };
}

const sha256 = (data: Buffer | string) =>
  `sha256:${createHash('sha256').update(data).digest('hex')}`;

/**
 * Pushes a one-layer OCI image with these labels to `repository`, tagged `tag`; returns its
 * reference by digest (`host/repository@sha256:…`), as a pinned osImageURL names it.
 */
export async function pushImage(
  registryUrl: string,
  repository: string,
  tag: string,
  labels: Record<string, string>,
): Promise<string> {
  const layer = Buffer.from(`hostflow test layer ${repository}:${tag}\n`);
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Labels: labels },
      rootfs: { type: 'layers', diff_ids: [sha256(layer)] },
    }),
  );
  for (const blob of [layer, config]) {
    const start = await fetch(`${registryUrl}/v2/${repository}/blobs/uploads/`, { method: 'POST' });
    if (start.status !== 202)
      throw new Error(`registry: upload to ${repository}: HTTP ${start.status}`);
    const location = new URL(start.headers.get('location')!, registryUrl);
    location.searchParams.set('digest', sha256(blob));
    const put = await fetch(location, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: blob,
    });
    if (put.status !== 201) throw new Error(`registry: blob to ${repository}: HTTP ${put.status}`);
  }
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: {
      mediaType: 'application/vnd.oci.image.config.v1+json',
      digest: sha256(config),
      size: config.length,
    },
    layers: [
      {
        mediaType: 'application/vnd.oci.image.layer.v1.tar',
        digest: sha256(layer),
        size: layer.length,
      },
    ],
  });
  const put = await fetch(`${registryUrl}/v2/${repository}/manifests/${tag}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    body: manifest,
  });
  if (put.status !== 201)
    throw new Error(
      `registry: manifest of ${repository}:${tag}: HTTP ${put.status} ${await put.text()}`,
    );
  return `${new URL(registryUrl).host}/${repository}@${sha256(manifest)}`;
}
