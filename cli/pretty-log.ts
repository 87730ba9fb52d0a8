// `hostflow start` shows its processes' JSON log lines (runtime/logger.ts) for a person:
//   14:02:07 INFO  worker      hostflow worker polling … taskQueue=hostflow
// The log files keep the JSON lines as written.

/** Fields every line has, shown by position rather than as key=value. */
const SHOWN = new Set(['level', 'time', 'msg', 'name', 'pid', 'hostname']);

export function prettyLine(line: string, name: string, width = name.length): string {
  let record: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed && typeof parsed === 'object' && 'msg' in parsed) {
      record = parsed as Record<string, unknown>;
    }
  } catch {
    // not one of ours (a crash's stack trace, a child's stderr): shown as it is
  }
  const time = new Date(typeof record?.time === 'string' ? record.time : Date.now());
  const clock = time.toTimeString().slice(0, 8);
  const prefix = `${name.padEnd(width)}  `;
  if (!record) return `${clock}       ${prefix}${line}`;
  const level = String(record.level ?? '').toUpperCase();
  const fields = Object.entries(record)
    .filter(([key, value]) => !SHOWN.has(key) && value !== undefined)
    .map(
      ([key, value]) =>
        `${key}=${typeof value === 'string' && !/\s/.test(value) ? value : JSON.stringify(value)}`,
    );
  return `${clock} ${level.padEnd(5)} ${prefix}${String(record.msg)}${fields.length ? `  ${fields.join(' ')}` : ''}`;
}
