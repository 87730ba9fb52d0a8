// moto's EC2 server on loopback: the cloud API the AWS provider is tested against.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { TOOLS_BIN } from './paths.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor } from './process.js';

export interface MotoServer {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startMoto(
  options: { port?: number; logDir?: string; restart?: boolean } = {},
): Promise<MotoServer> {
  const bin = join(TOOLS_BIN, 'moto_server');
  if (!existsSync(bin)) {
    throw new Error('moto: moto_server is not installed; run `bash deploy/bootstrap.sh`');
  }
  const port = options.port ?? (await freePort());
  const proc = spawnManaged('moto', bin, ['-H', '127.0.0.1', '-p', String(port)], {
    logFile: options.logDir ? join(options.logDir, 'moto.log') : undefined,
    restart: options.restart,
  });
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      'moto /moto-api/ to answer',
      async () => ((await fetch(`${endpoint}/moto-api/`)).ok ? true : undefined),
      {
        timeoutMs: 60_000,
        intervalMs: 200,
        process: proc,
      },
    );
  } catch (err) {
    await proc.stop();
    throw new Error(`moto: could not start: ${(err as Error).message}`, { cause: err });
  }
  return { endpoint, stop: () => proc.stop() };
}
