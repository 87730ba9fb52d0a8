// Images for the local kubelet, which pulls nothing: each is built here with buildah (in
// hostflow's own container storage, deploy/image/containers.sh), saved once as an archive in the
// build cache, and imported into the kubelet's containerd when that containerd lacks it.
import { execFile } from 'node:child_process';
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Containerd } from './containerd.js';
import { REPO_ROOT } from './paths.js';

const run = promisify(execFile);
const CONTAINERS = join(REPO_ROOT, 'deploy/image/containers.sh');

async function containers(args: string[]): Promise<string> {
  try {
    const { stdout } = await run('bash', [CONTAINERS, ...args], { maxBuffer: 64 << 20 });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${args.slice(0, 2).join(' ')}: ${(e.stderr || e.message).trim()}`, {
      cause: err,
    });
  }
}

/** Whether containerd already holds `image` (imported by an earlier run: its root is kept). */
async function hasImage(containerd: Containerd, image: string): Promise<boolean> {
  const names = await containerd.ctr(['images', 'ls', '-q']);
  return names.split('\n').includes(image);
}

/** Imports the archive at `tar` (which names `image`) unless containerd has the image already. */
export async function importImage(containerd: Containerd, image: string, tar: string) {
  if (await hasImage(containerd, image)) return;
  try {
    await containerd.ctr(['images', 'import', tar]);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`import ${image} into the kubelet's containerd: ${e.stderr || e.message}`, {
      cause: err,
    });
  }
  if (!(await hasImage(containerd, image))) {
    throw new Error(`import ${image}: ${tar} holds no image of that name`);
  }
}

/** Saves `image` from hostflow's container storage as a docker archive at `tar`, once. */
export async function saveImage(image: string, tar: string): Promise<string> {
  if (existsSync(tar)) return tar;
  await containers(['buildah', 'push', '--quiet', image, `docker-archive:${tar}.tmp:${image}`]);
  renameSync(`${tar}.tmp`, tar);
  return tar;
}

/**
 * The pod sandbox image: only the pause binary (deploy/kube-apiserver/pause, built with the
 * Kubernetes binaries in `bin`), as its archive in `bin`.
 */
export async function pauseImageArchive(bin: string, image: string): Promise<string> {
  const tar = join(bin, 'pause-image.tar');
  if (existsSync(tar)) return tar;
  const container = await containers(['buildah', 'from', 'scratch']);
  try {
    await containers(['buildah', 'copy', container, join(bin, 'pause'), '/pause']);
    await containers(['buildah', 'config', '--entrypoint', '["/pause"]', container]);
    await containers(['buildah', 'commit', '--quiet', '--rm', container, image]);
  } catch (err) {
    await containers(['buildah', 'rm', container]).catch(() => undefined);
    throw err;
  }
  return saveImage(image, tar);
}
