// The Temporal dev server, declared once in temporal-dev.yaml and started here for
// `npm start` (persistent) and the tests (in memory, random ports).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { parse } from 'yaml';
import { z } from 'zod';
import { REPO_ROOT, TOOLS_BIN } from './paths.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor } from './process.js';

const DevConfigSchema = z.object({
  namespace: z.string().min(1),
  ip: z.string().min(1),
  port: z.number().int().positive(),
  uiPort: z.number().int().positive(),
  metricsPort: z.number().int().positive(),
  dbFile: z.string().min(1),
  logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('warn'),
  searchAttributes: z.record(
    z.string(),
    z.enum(['Keyword', 'Text', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList']),
  ),
  dynamicConfig: z.record(z.string(), z.unknown()).default({}),
});

export type TemporalDevConfig = z.infer<typeof DevConfigSchema>;

export function loadTemporalDevConfig(
  path = join(REPO_ROOT, 'temporal-dev.yaml'),
): TemporalDevConfig {
  const parsed = DevConfigSchema.safeParse(parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    throw new Error(
      `${path}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data;
}

export interface TemporalDevServer {
  address: string;
  namespace: string;
  uiUrl: string;
  metricsUrl: string;
  stop(): Promise<void>;
}

/** The `temporal` CLI: the project-local one from the pinned pip package, else PATH. */
export function temporalCli(): string {
  const local = join(TOOLS_BIN, 'temporal');
  if (existsSync(local)) return local;
  try {
    execFileSync('temporal', ['--version'], { stdio: 'ignore' });
    return 'temporal';
  } catch {
    throw new Error(
      'temporal dev server: the temporal CLI is not installed; run `bash deploy/bootstrap.sh`',
    );
  }
}

export async function startTemporalDevServer(options: {
  /** Persist to the configured dbFile (relative to stateDir); in memory when false. */
  persist: boolean;
  stateDir?: string;
  /** Use the configured ports (npm start) or random free ones (tests). */
  fixedPorts: boolean;
  /** Restart the server whenever it exits (`hostflow start`; its state persists). */
  restart?: boolean;
  logDir?: string;
}): Promise<TemporalDevServer> {
  const config = loadTemporalDevConfig();
  const port = options.fixedPorts ? config.port : await freePort();
  const uiPort = options.fixedPorts ? config.uiPort : await freePort();
  const metricsPort = options.fixedPorts ? config.metricsPort : await freePort();
  const args = [
    'server',
    'start-dev',
    '--ip',
    config.ip,
    '--port',
    String(port),
    '--ui-port',
    String(uiPort),
    '--metrics-port',
    String(metricsPort),
    '--namespace',
    config.namespace,
    '--log-level',
    config.logLevel,
    '--log-format',
    'json',
  ];
  if (options.persist) {
    const dbFile = isAbsolute(config.dbFile)
      ? config.dbFile
      : join(options.stateDir ?? REPO_ROOT, config.dbFile);
    mkdirSync(dirname(dbFile), { recursive: true });
    args.push('--db-filename', dbFile);
  }
  for (const [name, type] of Object.entries(config.searchAttributes)) {
    args.push('--search-attribute', `${name}=${type}`);
  }
  for (const [key, value] of Object.entries(config.dynamicConfig)) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  const server = spawnManaged('temporal dev server', temporalCli(), args, {
    logFile: options.logDir ? join(options.logDir, 'temporal.log') : undefined,
    restart: options.restart,
  });
  const address = `${config.ip}:${port}`;
  try {
    await waitFor('temporal dev server gRPC port', () => tcpOpen(config.ip, port), {
      timeoutMs: 60_000,
      process: server,
    });
    await waitFor(
      'temporal namespace ' + config.namespace,
      () => namespaceReady(address, config.namespace),
      {
        timeoutMs: 30_000,
        process: server,
      },
    );
    // A persisted server registers --search-attribute only when its database is created:
    // attributes added by a later hostflow version are registered here.
    await registerSearchAttributes(address, config.namespace, config.searchAttributes);
  } catch (err) {
    await server.stop();
    throw new Error(`temporal dev server: could not start: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return {
    address,
    namespace: config.namespace,
    uiUrl: `http://${config.ip}:${uiPort}`,
    metricsUrl: `http://${config.ip}:${metricsPort}/metrics`,
    stop: () => server.stop(),
  };
}

/**
 * Registers `namespace` on a running dev server with hostflow's search attributes, as an operator
 * does for each install (docs/deploy.md): for a second engine beside the first one.
 */
export async function registerNamespace(address: string, namespace: string): Promise<void> {
  await createNamespace(address, namespace);
  await registerSearchAttributes(address, namespace, loadTemporalDevConfig().searchAttributes);
}

/** Creates `namespace`, bare (no search attributes of hostflow's), and waits until it is served. */
export async function createNamespace(address: string, namespace: string): Promise<void> {
  execFileSync(
    temporalCli(),
    ['operator', 'namespace', 'create', '--namespace', namespace, '--address', address],
    { stdio: 'pipe' },
  );
  await waitFor('temporal namespace ' + namespace, () => namespaceReady(address, namespace), {
    timeoutMs: 30_000,
  });
}

export async function registerSearchAttributes(
  address: string,
  namespace: string,
  wanted: Record<string, string>,
): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 5000 });
  let present: string[];
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({
      namespace,
    });
    present = Object.keys(customAttributes ?? {});
  } finally {
    await connection.close();
  }
  for (const [name, type] of Object.entries(wanted)) {
    if (present.includes(name)) continue;
    execFileSync(
      temporalCli(),
      ['operator', 'search-attribute', 'create', '--name', name, '--type', type].concat([
        '--address',
        address,
        '--namespace',
        namespace,
      ]),
      { stdio: 'pipe' },
    );
  }
}

async function namespaceReady(address: string, namespace: string): Promise<true | undefined> {
  const connection = await Connection.connect({ address, connectTimeout: 2000 });
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } finally {
    await connection.close();
  }
}

export function tcpOpen(host: string, port: number): Promise<true | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(undefined));
  });
}
