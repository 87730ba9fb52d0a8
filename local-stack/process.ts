// Child processes of the local stack: started with their output captured, stopped as a group.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  /** Resolves when the process has exited. */
  readonly exited: Promise<number | null>;
  /** Last lines of combined output, for error messages. */
  tail(lines?: number): string;
  /** SIGTERM the process group, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Append output to this file as well as keeping a tail in memory. */
  logFile?: string;
  /**
   * Start it again whenever it exits until stopped, with back-off (1 s doubling to 30 s, reset
   * after a minute up): how `hostflow start` keeps every process it runs alive.
   */
  restart?: boolean;
  /** With `restart`: always wait this long instead (a host's boot time, not a crash loop). */
  restartDelayMs?: number;
  /**
   * Each whole line of output as it comes (`hostflow start` shows them); a crash is then
   * reported without repeating its last lines.
   */
  echo?: (line: string) => void;
  /** Run as this user and group (a database server that refuses to run as root). */
  uid?: number;
  gid?: number;
}

const TAIL_LINES = 200;
const MAX_BACKOFF_MS = 30_000;

export function spawnManaged(
  name: string,
  command: string,
  args: string[],
  options: SpawnOptions = {},
): ManagedProcess {
  if (!options.restart) return spawnOnce(name, command, args, options);
  let current = spawnOnce(name, command, args, options);
  let stopping = false;
  let restarts = 0;
  let finished!: (code: number | null) => void;
  const exited = new Promise<number | null>((resolve) => (finished = resolve));
  const watch = (child: ManagedProcess, started: number): void => {
    void child.exited.then((code) => {
      if (stopping) return finished(code);
      if (Date.now() - started > 60_000) restarts = 0;
      const delay = options.restartDelayMs ?? Math.min(MAX_BACKOFF_MS, 1000 * 2 ** restarts++);
      // A planned restart (a host's reboot) is no news; a crash is, with what it said last.
      if (options.restartDelayMs === undefined) {
        const last = options.echo ? '' : ` Last output:\n${child.tail(15)}`;
        console.error(`hostflow: ${name} exited (code ${code}); restarting in ${delay} ms.${last}`);
      }
      setTimeout(() => {
        if (stopping) return finished(code);
        current = spawnOnce(name, command, args, options);
        watch(current, Date.now());
      }, delay);
    });
  };
  watch(current, Date.now());
  return {
    name,
    get pid() {
      return current.pid;
    },
    exited,
    tail: (lines) => current.tail(lines),
    async stop(graceMs) {
      stopping = true;
      await current.stop(graceMs);
      finished(null);
    },
  };
}

function spawnOnce(
  name: string,
  command: string,
  args: string[],
  options: SpawnOptions,
): ManagedProcess {
  const child: ChildProcess = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    uid: options.uid,
    gid: options.gid,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // own process group, so stop() reaches grandchildren too
  });
  const recent: string[] = [];
  let log: ReturnType<typeof createWriteStream> | undefined;
  if (options.logFile) {
    mkdirSync(dirname(options.logFile), { recursive: true });
    log = createWriteStream(options.logFile, { flags: 'a' });
  }
  const collect = (chunk: Buffer): void => {
    // Output can still arrive after 'exit' (buffered, or from grandchildren holding the pipe).
    if (log && !log.writableEnded) log.write(chunk);
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line) recent.push(line);
    }
    if (recent.length > TAIL_LINES) recent.splice(0, recent.length - TAIL_LINES);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  if (options.echo) {
    const echo = options.echo;
    for (const stream of [child.stdout, child.stderr]) {
      let partial = ''; // a line split across chunks is shown once whole
      stream?.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop()!;
        for (const line of lines) if (line) echo(line);
      });
      stream?.on('end', () => partial && echo(partial));
    }
  }
  let spawnError: Error | undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.on('error', (err) => {
      spawnError = err;
      resolve(null);
    });
    child.on('exit', (code) => resolve(code));
    // 'close' comes once the pipes are drained, so the log file gets all the output.
    child.on('close', () => log?.end());
  });
  let done = false;
  void exited.then(() => (done = true));

  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };

  return {
    name,
    get pid() {
      if (child.pid === undefined) {
        throw new Error(`${name}: could not start ${command}: ${spawnError?.message ?? 'unknown'}`);
      }
      return child.pid;
    },
    exited,
    tail: (lines = 30) =>
      [spawnError ? `spawn error: ${spawnError.message}` : '', ...recent.slice(-lines)]
        .filter(Boolean)
        .join('\n'),
    async stop(graceMs = 5000) {
      if (done) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      signalGroup('SIGKILL'); // stragglers left in the group
    },
  };
}

/** Polls `check` until it returns a value other than undefined, or fails naming `what`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  {
    timeoutMs = 30_000,
    intervalMs = 100,
    process: proc,
  }: { timeoutMs?: number; intervalMs?: number; process?: ManagedProcess } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let exited = false;
  void proc?.exited.then(() => (exited = true));
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (exited && proc) {
      throw new Error(`${proc.name} exited while waiting for ${what}:\n${proc.tail()}`);
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      const logs = proc ? `\n${proc.tail()}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}${logs}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
