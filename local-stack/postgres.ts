// PostgreSQL from Debian's packages, the store of the production-shaped Temporal
// (local-stack/temporal-server.ts). One server per data directory, on loopback only, with one
// password-protected role. PostgreSQL refuses to run as root, so as root it runs as the
// `postgres` user the Debian package creates, and its data directory is that user's.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';
import { spawnManaged, waitFor } from './process.js';

const run = promisify(execFile);
const DEBIAN_ROOT = '/usr/lib/postgresql';
const ROLE = 'temporal';

export interface Postgres {
  host: string;
  port: number;
  user: string;
  /** Read from a file beside the data directory; never passed on a command line. */
  password: string;
  /** The Debian package's binaries (psql for setup scripts). */
  binDir: string;
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /**
   * Where the data lives across runs (`npm start`); a fresh folder under the system's temporary
   * directory, removed at stop, when unset (tests).
   */
  dataDir?: string;
  port?: number;
  logFile?: string;
  /** Start it again whenever it exits (`hostflow start`). */
  restart?: boolean;
}

export async function startPostgres(options: PostgresOptions): Promise<Postgres> {
  const binDir = postgresBinDir();
  const owner = await serverUser();
  const ephemeral = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'hostflow-postgres-'));
  const passwordFile = join(dirname(dataDir), `${basename(dataDir)}.password`);
  const password = existsSync(passwordFile)
    ? readFileSync(passwordFile, 'utf8').trim()
    : createPassword(passwordFile);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (owner) chownSync(dataDir, owner.uid, owner.gid);
  if (!existsSync(join(dataDir, 'PG_VERSION'))) await initDataDir(binDir, dataDir, password, owner);

  const port = options.port ?? (await freePort());
  const args = ['-D', dataDir, '-p', String(port), '-k', dataDir];
  args.push('-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300');
  // A throwaway database need not survive a crash of the machine: no fsync (tests only).
  if (ephemeral) args.push('-c', 'fsync=off', '-c', 'synchronous_commit=off');
  const server = spawnManaged('postgres', join(binDir, 'postgres'), args, {
    logFile: options.logFile,
    restart: options.restart,
    uid: owner?.uid,
    gid: owner?.gid,
  });
  const stop = async (): Promise<void> => {
    await server.stop(10_000);
    if (ephemeral) {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(passwordFile, { force: true });
    }
  };
  try {
    await waitFor('postgres to accept connections', () => ready(binDir, port), {
      timeoutMs: 60_000,
      intervalMs: 250,
      process: server,
    });
  } catch (err) {
    await stop();
    throw new Error(`postgres: could not start: ${(err as Error).message}`, { cause: err });
  }
  return { host: '127.0.0.1', port, user: ROLE, password, binDir, stop };
}

/** Runs one SQL statement as the role and returns its rows (columns separated by `|`). */
export async function psql(pg: Postgres, database: string, sql: string): Promise<string[]> {
  const { command, args, env } = psqlCommand(pg, database);
  const { stdout } = await run(command, [...args, '-AtX', '-c', sql], { env });
  return String(stdout).split('\n').filter(Boolean);
}

/** psql connected as the role to `database`, its password in the environment, not the arguments. */
export function psqlCommand(
  pg: Postgres,
  database: string,
): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  return {
    command: join(pg.binDir, 'psql'),
    args: ['-h', pg.host, '-p', String(pg.port), '-U', pg.user, '-d', database],
    env: { ...process.env, PGPASSWORD: pg.password },
  };
}

/** The newest PostgreSQL major version Debian's packages installed. */
function postgresBinDir(): string {
  const majors = existsSync(DEBIAN_ROOT)
    ? readdirSync(DEBIAN_ROOT)
        .filter((v) => existsSync(join(DEBIAN_ROOT, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length === 0) {
    throw new Error(
      `postgres: PostgreSQL is not installed (nothing under ${DEBIAN_ROOT}); run ` +
        '`bash deploy/bootstrap.sh`, which installs postgresql-15 from Debian',
    );
  }
  return join(DEBIAN_ROOT, majors[0]!, 'bin');
}

/** As root, the `postgres` user's ids; as anyone else, none (it runs as that user). */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const [uid, gid] = await Promise.all(
      ['-u', '-g'].map(async (flag) => Number((await run('id', [flag, 'postgres'])).stdout)),
    );
    return { uid: uid!, gid: gid! };
  } catch {
    throw new Error(
      'postgres: running as root needs the `postgres` user that the postgresql package creates; ' +
        'run `bash deploy/bootstrap.sh`',
    );
  }
}

function createPassword(file: string): string {
  const password = randomBytes(18).toString('base64url');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, password + '\n', { mode: 0o600 });
  return password;
}

async function initDataDir(
  binDir: string,
  dataDir: string,
  password: string,
  owner: { uid: number; gid: number } | undefined,
): Promise<void> {
  // initdb reads the password from a file its user can read, removed right after.
  const scratch = mkdtempSync(join(tmpdir(), 'hostflow-initdb-'));
  const pwfile = join(scratch, 'pw');
  writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  if (owner) {
    chownSync(scratch, owner.uid, owner.gid);
    chownSync(pwfile, owner.uid, owner.gid);
  }
  try {
    await run(
      join(binDir, 'initdb'),
      ['-D', dataDir, '-U', ROLE, `--pwfile=${pwfile}`, '-A', 'scram-sha-256'].concat([
        '-E',
        'UTF8',
        '--no-instructions',
      ]),
      { uid: owner?.uid, gid: owner?.gid },
    );
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    const hint = owner
      ? ` (as root it runs as the postgres user, which must be able to reach ${dataDir})`
      : '';
    throw new Error(`postgres: initdb failed${hint}: ${(e.stderr || e.message).trim()}`, {
      cause: err,
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function ready(binDir: string, port: number): Promise<true | undefined> {
  try {
    await run(join(binDir, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)]);
    return true;
  } catch {
    return undefined;
  }
}
