// Everything a workflow history holds as text: every string, and every payload decoded as UTF-8,
// so a test can prove what never enters history (private keys, OTPs, cloud credentials).
import type { Client } from '@temporalio/client';

export async function historyText(client: Client, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const parts: string[] = [];
  const seen = new Set<unknown>();
  const walk = (value: unknown): void => {
    if (value === null || value === undefined || seen.has(value)) return;
    if (typeof value === 'string') parts.push(value);
    else if (value instanceof Uint8Array) parts.push(Buffer.from(value).toString('utf8'));
    else if (typeof value === 'object') {
      seen.add(value);
      for (const child of Object.values(value as Record<string, unknown>)) walk(child);
    }
  };
  walk(history);
  return parts.join('\n');
}
