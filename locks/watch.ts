// Watches every Lock and keeps its Enforced condition true to the facts (status.ts): a new
// Lock gets it at once; a namespace that opts in or out later is caught at the next relist.
import type { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { LOCK_API } from './api.js';
import { innermostMessage } from '../shared/failures.js';
import { ListWatch } from '../k8s-bridge/list-watch.js';
import type { LockObject, LockStatusWriter } from './status.js';
import type { LineLog } from '../runtime/logger.js';

export interface LockWatchOptions {
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  status: LockStatusWriter;
  /** How often every Lock is looked at again (namespace labels are not watched). */
  resyncMs: number;
  log?: LineLog;
}

export class LockWatch {
  private readonly listWatch: ListWatch<LockObject>;
  private running?: Promise<void>;

  constructor(options: LockWatchOptions) {
    const log = options.log ?? ((m) => console.log(m));
    const reconcile = async (lock: LockObject): Promise<void> => {
      try {
        await options.status.reconcile(lock);
      } catch (err) {
        // The next event or relist tries again.
        log(
          `Lock ${lock.metadata.namespace}/${lock.metadata.name}: ${innermostMessage(err)}`,
          'warn',
        );
      }
    };
    const { group, version, plural } = LOCK_API;
    this.listWatch = new ListWatch<LockObject>({
      name: 'Lock watch',
      kubeConfig: options.kubeConfig,
      watchPath: `/apis/${group}/${version}/${plural}`,
      resyncMs: options.resyncMs,
      log,
      list: async (continueToken) => {
        const list = (await options.custom.listClusterCustomObject({
          ...LOCK_API,
          _continue: continueToken,
          limit: 500,
        })) as { items: LockObject[]; metadata?: { resourceVersion?: string; continue?: string } };
        return {
          items: list.items,
          resourceVersion: list.metadata?.resourceVersion ?? '',
          continueToken: list.metadata?.continue || undefined,
        };
      },
      onListStart: () => undefined,
      onListPage: async (items) => {
        for (const lock of items) await reconcile(lock);
      },
      onListDone: () => undefined,
      onEvent: async (type, lock) => {
        if (type !== 'DELETED') await reconcile(lock);
      },
    });
  }

  start(): void {
    this.running ??= this.listWatch.run();
  }

  async stop(): Promise<void> {
    this.listWatch.stop();
    await this.running;
  }
}
