// What the on-call commands (status, describe, replay) share: the engine's own settings from the
// environment, one Temporal client, `-o text|json`, and exit codes — 2 for a usage error (with
// the command's usage), 1 for anything that went wrong after the arguments were understood.
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { loadSettings, temporalConnection, type Settings } from '../runtime/settings.js';
import { waitingFor } from './progress.js';

/** Bad arguments: the command prints the message and its usage, and exits 2. */
export class UsageError extends Error {}

export const OUTPUT_FORMATS = ['text', 'json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const OUTPUT_OPTION = { output: { type: 'string', short: 'o' } } as const;

/** The command's arguments (strict, with positionals); a parse error is a usage error. */
export function parseCommandArgs<O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: O,
) {
  try {
    return parseArgs({ args, strict: true, allowPositionals: true, options });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function outputFormat(value: string | undefined): OutputFormat {
  if (value === undefined) return 'text';
  if ((OUTPUT_FORMATS as readonly string[]).includes(value)) return value as OutputFormat;
  throw new UsageError(`unknown output format "${value}": use -o json, or -o text (the default)`);
}

export interface TemporalContext {
  client: Client;
  settings: Settings;
  /** Runs `fn` with every Temporal call in it bounded, so a silent server cannot hang on-call. */
  bounded<T>(ms: number, fn: () => Promise<T>): Promise<T>;
}

/** Connects as the engine does (TEMPORAL_* settings), runs `fn`, and closes the connection. */
export async function withTemporal<T>(
  command: string,
  fn: (ctx: TemporalContext) => Promise<T>,
): Promise<T> {
  const settings = loadSettings();
  const where = `Temporal at ${settings.TEMPORAL_ADDRESS}`;
  const connection = await waitingFor(command, where, () =>
    Connection.connect(temporalConnection(settings)),
  ).catch((err: unknown) => {
    throw new Error(
      `cannot reach ${where} (TEMPORAL_ADDRESS, TEMPORAL_TLS*, TEMPORAL_API_KEY): ${(err as Error).message}`,
      { cause: err },
    );
  });
  try {
    const client = new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE });
    return await fn({
      client,
      settings,
      bounded: (ms, work) => connection.withDeadline(Date.now() + ms, work),
    });
  } finally {
    await connection.close();
  }
}

/** The reason a workflow gave for refusing or failing an update, without the client's wrapping. */
export function updateRefusal(err: unknown): string | undefined {
  if (!(err instanceof WorkflowUpdateFailedError)) return undefined;
  return err.cause instanceof Error ? err.cause.message : err.message;
}

/** Runs a command: usage errors exit 2 with the usage, other errors exit 1 with their message. */
export async function runCommand(
  command: string,
  usage: string,
  run: () => Promise<number>,
): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${command}: ${err.message}\n${usage}`);
      return 2;
    }
    console.error(`${command}: ${(err as Error).message}`);
    return 1;
  }
}

/** What a report command is given: its positional arguments and the cluster to read. */
export interface ReportRequest {
  positionals: string[];
  flags: { kubeconfig?: string; context?: string };
}

/**
 * A command that reads the engine and prints what it found (`status`, `describe`): `-o text|json`,
 * `--kubeconfig` and `--context` for the cluster, one Temporal connection. `check` looks at the
 * arguments before anything is reached; `exitCode` says 1 for a report that shows a problem.
 */
export function reportCommand<Target, Report>(
  command: string,
  usage: string,
  args: string[],
  report: {
    check(positionals: string[]): Target;
    read(ctx: TemporalContext, target: Target, flags: ReportRequest['flags']): Promise<Report>;
    text(found: Report): string;
    exitCode?(found: Report): number;
  },
): Promise<number> {
  return runCommand(command, usage, async () => {
    const { values, positionals } = parseCommandArgs(args, {
      ...OUTPUT_OPTION,
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
    });
    const target = report.check(positionals);
    const format = outputFormat(values.output);
    const flags = { kubeconfig: values.kubeconfig, context: values.context };
    const found = await withTemporal(command, (ctx) => report.read(ctx, target, flags));
    console.log(format === 'json' ? JSON.stringify(found, null, 2) : report.text(found));
    return report.exitCode?.(found) ?? 0;
  });
}

/** `3 s`, `4 min 5 s`, `2 h 10 min`: how long, for people. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return ms < 1000 && ms > 0 ? `${Math.round(ms)} ms` : `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  return m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${Math.floor(m / 60)} h`;
}

/** Rows as aligned columns, for the human output. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
