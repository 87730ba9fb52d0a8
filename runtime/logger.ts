// One JSON line per log record, for every hostflow process (worker, bridge, OTP service,
// lock-audit): `{"level":"info","time":"…","name":"worker",…,"msg":"…"}`, searchable by any field.
import { pino, type Logger } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A logger for code that takes a plain function (k8s-bridge, the OTP server). */
export type LineLog = (message: string, level?: LogLevel, fields?: Record<string, unknown>) => void;

/**
 * Fields that could carry secret material are censored wherever they appear in a record (at the
 * top or one level down): nothing logs them today, and a future `log.info(..., input)` must not.
 */
const REDACTED = [
  'otp',
  'privateKey',
  'adminKey',
  'key',
  'id_rsa',
  'token',
  'storeToken',
  'taskToken',
  'apiKey',
  'password',
  'authorization',
  'stringData',
  'data',
].flatMap((field) => [field, `*.${field}`]);

/**
 * The process's logger, at HOSTFLOW_LOG_LEVEL. An invalid level falls back to info here so the
 * settings error (runtime/settings.ts names the variable) is itself logged, at error level.
 */
export function createLogger(name: string, env: NodeJS.ProcessEnv = process.env): Logger {
  const wanted = env.HOSTFLOW_LOG_LEVEL as LogLevel | undefined;
  return pino(
    {
      name,
      level: wanted && LOG_LEVELS.includes(wanted) ? wanted : 'info',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED, censor: '[redacted]' },
    },
    // Writes to files and pipes are synchronous on Linux (Node's process I/O docs), so the
    // line logged just before process.exit() is never lost.
    process.stdout,
  );
}

/** `log` as a LineLog. */
export function lineLog(log: Logger): LineLog {
  return (message, level = 'info', fields = {}) => log[level](fields, message);
}
