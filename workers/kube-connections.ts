// @kubernetes/client-node 1.4 builds a new https.Agent for every request, so every API call
// pays a fresh TCP + TLS handshake. This keeps one keep-alive agent per distinct TLS identity
// (so rotated client certificates still take effect) and hands it to every request.
import type { KubeConfig } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { Agent } from 'node:https';

interface RequestContext {
  getAgent(): unknown;
  setAgent(agent: unknown): void;
}

const MAX_AGENTS = 4;

export function shareConnections(kc: KubeConfig, maxSockets = 64): KubeConfig {
  const original = kc.applySecurityAuthentication.bind(kc);
  const agents = new Map<string, Agent>();
  kc.applySecurityAuthentication = async (context: RequestContext) => {
    await original(context as never);
    const fresh = context.getAgent();
    // Only plain TLS agents: proxy agents carry per-proxy state and are left alone.
    if (
      !(fresh instanceof Agent) ||
      fresh.constructor !== Agent ||
      kc.getCurrentCluster()?.proxyUrl
    )
      return;
    const options = fresh.options;
    const identity = createHash('sha256')
      .update(
        JSON.stringify([
          options.ca,
          options.cert,
          options.key,
          options.servername,
          options.rejectUnauthorized,
        ]),
      )
      .digest('hex');
    let shared = agents.get(identity);
    if (!shared) {
      shared = new Agent({ ...options, keepAlive: true, maxSockets });
      agents.set(identity, shared);
      if (agents.size > MAX_AGENTS) {
        const [oldest] = agents.keys();
        agents.get(oldest!)?.destroy();
        agents.delete(oldest!);
      }
    }
    fresh.destroy();
    context.setAgent(shared);
  };
  return kc;
}
