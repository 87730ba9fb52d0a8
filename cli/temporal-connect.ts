// The Temporal client of the on-call commands: reached as the worker reaches it, from the same
// environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*), which is
// also the `temporal` CLI's.
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { loadSettings, temporalConnection } from '../workers/settings.js';

/** Runs `use` with a client; a Temporal that cannot be reached is an error naming the address. */
export async function withTemporal<T>(use: (client: Client) => Promise<T>): Promise<T> {
  const settings = loadSettings();
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...temporalConnection(settings),
      connectTimeout: 10_000,
    });
  } catch (err) {
    throw new Error(
      `cannot reach Temporal at ${settings.TEMPORAL_ADDRESS} (TEMPORAL_ADDRESS): ${(err as Error).message}`,
      { cause: err },
    );
  }
  try {
    return await use(new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE }));
  } finally {
    await connection.close();
  }
}

/** The reason a workflow gave for refusing or failing an update, without the client's wrapping. */
export function updateRefusal(err: unknown): string | undefined {
  if (!(err instanceof WorkflowUpdateFailedError)) return undefined;
  return err.cause instanceof Error ? err.cause.message : err.message;
}
