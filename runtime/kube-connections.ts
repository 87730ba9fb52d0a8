// @kubernetes/client-node 2.0 still builds a new undici Agent for every API request (its
// createDispatcher has no cache), so every call pays a fresh TCP + TLS handshake, and nothing
// reuses a connection. This keeps one keep-alive Agent per distinct TLS identity (so rotated
// client certificates still take effect) and hands it to every request and watch.
//
// It replaces the client's (private) dispatcher factory; the check below makes an upgrade that
// renames it fail at start rather than quietly go back to a handshake per call.
import type { KubeConfig } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { Agent, type Dispatcher } from 'undici';

type DispatcherFactory = (cluster: unknown, agentOptions: unknown) => Dispatcher | undefined;

const MAX_AGENTS = 4;

export interface SharedConnections {
  /** TCP connections opened to the API server so far: one per socket, not per request. */
  readonly opened: number;
}

export function shareConnections(kc: KubeConfig, maxSockets = 64): KubeConfig & SharedConnections {
  const client = kc as unknown as { createDispatcher?: DispatcherFactory };
  const original = client.createDispatcher?.bind(kc);
  if (!original) {
    throw new Error('@kubernetes/client-node has no createDispatcher: update kube-connections.ts');
  }
  const agents = new Map<string, Agent>();
  let opened = 0;
  client.createDispatcher = (cluster, agentOptions) => {
    const options = kc.createDispatcherOptions(cluster as never, agentOptions as never);
    // Only plain TLS agents: proxy and SOCKS dispatchers carry their own state.
    if (options.type !== 'agent') return original(cluster, agentOptions);
    const { ca, cert, key, servername, rejectUnauthorized } = options.connect;
    const identity = createHash('sha256')
      .update(JSON.stringify([ca, cert, key, servername, rejectUnauthorized].map(String)))
      .digest('hex');
    let shared = agents.get(identity);
    if (!shared) {
      shared = new Agent({ connect: options.connect, connections: maxSockets });
      shared.on('connect', () => (opened += 1));
      agents.set(identity, shared);
      if (agents.size > MAX_AGENTS) {
        const [oldest] = agents.keys();
        void agents.get(oldest!)?.close();
        agents.delete(oldest!);
      }
    }
    return shared;
  };
  return Object.defineProperty(kc, 'opened', { get: () => opened }) as KubeConfig &
    SharedConnections;
}
