// A production-shaped Temporal, as a platform team runs one: the server built from the Go module
// proxy (temporal-server/build.sh), on PostgreSQL for persistence and SQL visibility, its schemas
// set up and updated with the server's own SQL tool, and frontend, history, matching and worker
// as four processes that find each other through the database's membership table. Its dynamic
// config is temporal-dev.yaml's, the values docs/deploy.md asks operators for. Tests and
// `npm start --temporal=server` use it; the dev server (temporal.ts) stays the default.
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { runBuildScript } from './build-script.js';
import { freePort } from './ports.js';
import { psql, startPostgres, type Postgres } from './postgres.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';
import { loadTemporalDevConfig, registerSearchAttributes, tcpOpen } from './temporal.js';

const run = promisify(execFile);

export const TEMPORAL_SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

/** The databases and their versioned schemas, as the server's release ships them (build.sh). */
const DATABASES = [
  { name: 'temporal', schema: 'schema/postgresql/v12/temporal', store: 'postgres-default' },
  {
    name: 'temporal_visibility',
    schema: 'schema/postgresql/v12/visibility',
    store: 'postgres-visibility',
  },
] as const;

const RETENTION = '3 days';

export interface TemporalServer {
  address: string;
  namespace: string;
  metricsUrl: string;
  /** The server's own version, as the frontend reports it. */
  version: string;
  /** Its PostgreSQL, and the database that holds visibility (what tests make lag). */
  database: { postgres: Postgres; visibility: string };
  /** One service's process: `kill -9` and start again, as a crashed pod is. */
  service(name: TemporalService): { kill(): Promise<void>; start(): Promise<void> };
  stop(): Promise<void>;
}

export interface TemporalServerOptions {
  /** Where its configs live; with `persist`, PostgreSQL's data too. */
  stateDir: string;
  /** Keep the database across runs (`npm start`); a throwaway one otherwise. */
  persist: boolean;
  /** The frontend on temporal-dev.yaml's port (`npm start`); every port random otherwise. */
  fixedPorts: boolean;
  /** Start each process again whenever it exits (`hostflow start`). */
  restart?: boolean;
  logDir?: string;
}

/** Builds it the first time (5-15 minutes); returns the folder of temporal-server and its SQL tool. */
export async function ensureTemporalServer(): Promise<string> {
  const [dir] = await runBuildScript('Temporal server', 'local-stack/temporal-server/build.sh');
  return dir!;
}

export async function startTemporalServer(options: TemporalServerOptions): Promise<TemporalServer> {
  const config = loadTemporalDevConfig();
  const bin = await ensureTemporalServer();
  const dir = options.persist ? options.stateDir : mkdtempSync(join(tmpdir(), 'hostflow-tsrv-'));
  mkdirSync(dir, { recursive: true });
  const log = (name: string): string | undefined =>
    options.logDir ? join(options.logDir, `${name}.log`) : undefined;
  const pg = await startPostgres({
    dataDir: options.persist ? join(dir, 'postgres') : undefined,
    logFile: log('postgres'),
    restart: options.restart,
  });
  const configFile = (name: TemporalService) => join(dir, `${name}.yaml`);
  const processes = new Map<TemporalService, ManagedProcess>();
  /** Services whose process ended (without `restart`, for good). */
  const ended = new Set<TemporalService>();
  const stop = async (): Promise<void> => {
    // The frontend first, so clients see it go; then the rest; the database last.
    for (const name of ['frontend', 'worker', 'matching', 'history'] as const) {
      await processes.get(name)?.stop(10_000);
    }
    await pg.stop();
    if (!options.persist) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await setUpSchemas(bin, pg);
    const ports = await servicePorts(options.fixedPorts ? config.port : undefined);
    const dynamicConfigFile = join(dir, 'dynamicconfig.yaml');
    writeFileSync(dynamicConfigFile, stringify(dynamicConfigFileOf(config.dynamicConfig)));
    for (const name of TEMPORAL_SERVICES) {
      writeFileSync(configFile(name), stringify(serverConfig(pg, ports, name, dynamicConfigFile)), {
        mode: 0o600, // it holds the database password
      });
    }
    const start = (name: TemporalService): void => {
      const file = configFile(name);
      const args = ['--config-file', file, '--allow-no-auth', 'start', '--service', name];
      ended.delete(name);
      const proc = spawnManaged(`temporal ${name}`, join(bin, 'temporal-server'), args, {
        logFile: log(`temporal-${name}`),
        restart: options.restart,
      });
      processes.set(name, proc);
      void proc.exited.then(() => ended.add(name));
    };
    // One process sets up the cluster's metadata in a fresh database; several at once race to
    // insert it, and the losers exit ("failed to initialize current cluster metadata").
    start('history');
    await waitFor('temporal history gRPC port', () => tcpOpen('127.0.0.1', ports.history.grpc), {
      timeoutMs: 120_000,
      process: processes.get('history'),
    });
    for (const name of TEMPORAL_SERVICES) if (name !== 'history') start(name);
    const address = `127.0.0.1:${ports.frontend.grpc}`;
    const frontend = processes.get('frontend')!;
    await waitFor('temporal frontend gRPC port', () => tcpOpen('127.0.0.1', ports.frontend.grpc), {
      timeoutMs: 120_000,
      process: frontend,
    });
    const version = await waitFor(
      'temporal server to serve',
      () => readyNamespace(address, config.namespace),
      { timeoutMs: 120_000, intervalMs: 500, process: frontend },
    );
    await registerSearchAttributes(address, config.namespace, config.searchAttributes);
    if (!options.restart && ended.size > 0) {
      throw new Error(`the ${[...ended].join(', ')} service ended while the server started`);
    }
    return {
      address,
      namespace: config.namespace,
      metricsUrl: `http://127.0.0.1:${ports.frontend.metrics}/metrics`,
      version,
      database: { postgres: pg, visibility: DATABASES[1].name },
      service: (name) => ({
        kill: async () => {
          const proc = processes.get(name)!;
          process.kill(-proc.pid, 'SIGKILL');
          await proc.exited;
        },
        start: async () => start(name),
      }),
      stop,
    };
  } catch (err) {
    const tails = [...processes.values()].map((p) => `--- ${p.name}:\n${p.tail(10)}`).join('\n');
    await stop();
    throw new Error(`temporal server: could not start: ${(err as Error).message}\n${tails}`, {
      cause: err,
    });
  }
}

/** Creates both databases on first use and brings their schemas to the server's version. */
async function setUpSchemas(bin: string, pg: Postgres): Promise<void> {
  const env = {
    ...process.env,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: pg.host,
    SQL_PORT: String(pg.port),
    SQL_USER: pg.user,
    SQL_PASSWORD: pg.password,
  };
  const tool = (args: string[]) =>
    run(join(bin, 'temporal-sql-tool'), args, { env }).catch((err: { stderr?: string }) => {
      throw new Error(`temporal-sql-tool ${args.join(' ')}: ${err.stderr ?? String(err)}`);
    });
  const present = new Set(await psql(pg, 'postgres', 'SELECT datname FROM pg_database'));
  for (const db of DATABASES) {
    if (!present.has(db.name)) {
      await tool(['--db', db.name, 'create-database']);
      await tool(['--db', db.name, 'setup-schema', '-v', '0.0']);
    }
    // To the newest version this server ships: what an operator runs before each upgrade.
    await tool(['--db', db.name, 'update-schema', '-d', join(bin, db.schema, 'versioned')]);
  }
}

interface ServicePorts {
  grpc: number;
  membership: number;
  metrics: number;
  http?: number;
}

async function servicePorts(
  frontendPort: number | undefined,
): Promise<Record<TemporalService, ServicePorts>> {
  const ports = {} as Record<TemporalService, ServicePorts>;
  for (const name of TEMPORAL_SERVICES) {
    ports[name] = {
      grpc: name === 'frontend' && frontendPort ? frontendPort : await freePort(),
      membership: await freePort(),
      metrics: await freePort(),
      ...(name === 'frontend' ? { http: await freePort() } : {}),
    };
  }
  return ports;
}

/**
 * The server's static config. Every process reads all services' ports (each finds the others
 * through membership); only its metrics listener is its own.
 */
function serverConfig(
  pg: Postgres,
  ports: Record<TemporalService, ServicePorts>,
  service: TemporalService,
  dynamicConfigFile: string,
): object {
  const datastores = Object.fromEntries(
    DATABASES.map((db) => [
      db.store,
      {
        sql: {
          pluginName: 'postgres12',
          databaseName: db.name,
          connectAddr: `${pg.host}:${pg.port}`,
          connectProtocol: 'tcp',
          user: pg.user,
          password: pg.password,
          maxConns: db.name === 'temporal' ? 20 : 10,
          maxIdleConns: db.name === 'temporal' ? 20 : 10,
          maxConnLifetime: '1h',
        },
      },
    ]),
  );
  const frontend = `127.0.0.1:${ports.frontend.grpc}`;
  return {
    log: { stdout: true, level: 'warn', format: 'json' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      datastores,
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      metrics: {
        prometheus: {
          framework: 'tally',
          timerType: 'histogram',
          listenAddress: `127.0.0.1:${ports[service].metrics}`,
        },
      },
    },
    services: Object.fromEntries(
      TEMPORAL_SERVICES.map((name) => [
        name,
        {
          rpc: {
            grpcPort: ports[name].grpc,
            membershipPort: ports[name].membership,
            bindOnLocalHost: true,
            ...(ports[name].http ? { httpPort: ports[name].http } : {}),
          },
        },
      ]),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: frontend,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    publicClient: { hostPort: frontend },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/** temporal-dev.yaml's `dynamicConfig` in the server's file format (one unconstrained value each). */
function dynamicConfigFileOf(values: Record<string, unknown>): object {
  return Object.fromEntries(
    Object.entries(values).map(([key, value]) => [key, [{ value, constraints: {} }]]),
  );
}

/**
 * Registers the namespace once the frontend serves (a fresh cluster answers Unavailable while its
 * services join) and returns the server's version once the frontend reaches the history and the
 * matching services for it too; undefined until then.
 */
async function readyNamespace(address: string, namespace: string): Promise<string | undefined> {
  const connection = await Connection.connect({ address, connectTimeout: 2000 });
  try {
    const service = connection.workflowService;
    const { serverVersion } = await service.getSystemInfo({});
    try {
      await service.describeNamespace({ namespace });
    } catch {
      await service.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs(RETENTION),
      });
    }
    // Visibility, then matching (a task queue's description) and history (a workflow it does not
    // have: NotFound is its answer, Unavailable is not).
    await service.countWorkflowExecutions({ namespace, query: '' });
    await service.describeTaskQueue({ namespace, taskQueue: { name: 'hostflow-readiness' } });
    await service
      .describeWorkflowExecution({ namespace, execution: { workflowId: 'hostflow-readiness' } })
      .catch((err: { code?: number }) => {
        if (err.code !== NOT_FOUND) throw err;
      });
    return serverVersion || 'unknown';
  } finally {
    await connection.close();
  }
}

/** gRPC's NOT_FOUND status code. */
const NOT_FOUND = 5;
