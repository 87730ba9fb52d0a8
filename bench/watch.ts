// A watch that outlives quiet spells: client-node's Watch ends after 30 s without an event (its
// inactivity timeout), and a bench whose slowest TaskRun is served after such a spell would
// wait for its Secret forever. This one watches again from the last resourceVersion it saw.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { SECRET_PREFIX } from '../platform-config/contract.js';

interface Watched {
  metadata?: { name?: string; resourceVersion?: string };
}

export function keepWatching<T extends Watched>(
  kc: KubeConfig,
  path: string,
  onEvent: (type: string, object: T) => void,
): { ready: Promise<void>; stop(): void } {
  let stopped = false;
  let connected!: () => void;
  const ready = new Promise<void>((resolve) => (connected = resolve));
  let resourceVersion: string | undefined;
  let current: AbortController | undefined;
  const start = async (): Promise<void> => {
    if (stopped) return;
    try {
      current = await new Watch(kc).watch(
        path,
        resourceVersion ? { resourceVersion } : {},
        (type: string, object: T) => {
          resourceVersion = object.metadata?.resourceVersion ?? resourceVersion;
          onEvent(type, object);
        },
        () => void setTimeout(start, 100),
      );
      connected(); // events from here on are seen: the caller may start what it times
    } catch {
      setTimeout(start, 1000); // the API server is busy or restarting: try again
    }
  };
  void start();
  return {
    ready,
    stop: () => {
      stopped = true;
      current?.abort();
    },
  };
}

/** The TaskRun Secrets (`multi-platform-ssh-<TaskRun>`) of a namespace, by their TaskRun's name. */
export function watchTaskRunSecrets(
  kc: KubeConfig,
  namespace: string,
  onEvent: (type: string, taskRun: string) => void,
): { ready: Promise<void>; stop(): void } {
  return keepWatching(kc, `/api/v1/namespaces/${namespace}/secrets`, (type, secret: Watched) => {
    const name = secret.metadata?.name;
    if (name?.startsWith(SECRET_PREFIX)) onEvent(type, name.slice(SECRET_PREFIX.length));
  });
}
