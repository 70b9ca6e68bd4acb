/**
 * Structured logs with pino. Credentials never reach a log line: the
 * redact list covers the headers and fields that could carry them.
 *
 * The access log writes its own lines to the same destination, in pino's
 * line format: its fields are fixed and credential-free by construction (no
 * query string, no headers; pipeline/stages/access-log.ts), so it skips
 * pino's generic serializer and redaction, which cost about 12 µs a line —
 * more than a tenth of a proxied request (bench/README.md, proxy).
 *
 * Without a given destination, lines go to stdout in blocks of at least
 * 4 KiB and at least once a second (nginx's `access_log … buffer= flush=`):
 * one write per request cost about a tenth of a proxied request again.
 * Pending lines are written at `close()` and when the process exits.
 */
import { type DestinationStream, type Logger, pino } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.preshared_key',
  '*.value',
  '*.token',
  '*.access_token',
  '*.refresh_token',
];

const BLOCK_BYTES = 4096;
const FLUSH_MS = 1000;

/** Where access-log lines go: one JSON line each, written only when the log level admits `info`. */
export interface AccessSink {
  readonly enabled: boolean;
  write(line: string): void;
}

export interface Loggers {
  readonly logger: Logger;
  readonly accessLog: AccessSink;
  /** Writes out what is buffered and stops the periodic flush. */
  close(): void;
}

export function createLoggers(level: string, destination?: DestinationStream): Loggers {
  const stdout = destination
    ? null
    : pino.destination({ dest: process.stdout.fd ?? 1, minLength: BLOCK_BYTES, sync: false });
  const timer = stdout ? setInterval(() => stdout.flush(), FLUSH_MS).unref() : null;
  const sink = destination ?? (stdout as DestinationStream);
  const logger = pino(
    { level, base: { svc: 'meshgate' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    sink,
  );
  return {
    logger,
    accessLog: { enabled: logger.isLevelEnabled('info'), write: (line) => sink.write(line) },
    close() {
      if (timer) clearInterval(timer);
      stdout?.flush();
    },
  };
}
