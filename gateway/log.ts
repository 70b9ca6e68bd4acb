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
 * 64 KiB and at least once a second (nginx's `access_log … buffer= flush=`):
 * one write per request cost about a tenth of a proxied request again.
 * Pending lines are written at `close()` and when the process exits.
 */
import { writeSync } from 'node:fs';
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

/**
 * The access log is written to stdout in blocks of this size (and at least once a second, FLUSH_MS): each write is
 * one trip through libuv's thread pool, which in 4 KiB blocks (~16 lines) took 2.4 % of a proxied request's CPU, in
 * 16 KiB ones 1.2 %; 64 KiB blocks cost ~0.45 µs a line less than 16 KiB ones (bench/README.md, proxy). A process
 * killed (SIGKILL) loses what it had not written yet: up to about a second of lines, whatever the block size.
 */
const BLOCK_BYTES = 65_536;
const FLUSH_MS = 1000;
/**
 * How long the exit may wait for stdout's reader: a pipe is non-blocking and answers EAGAIN while full (a block is
 * as large as Linux's default pipe buffer), so the last lines are written as the reader drains it, as sonic-boom's
 * own synchronous flush retries.
 */
const EXIT_WRITE_WAIT_MS = 2000;
const EXIT_WRITE_PAUSE_MS = 10;

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
  if (destination)
    return loggersOn(
      level,
      destination,
      (line) => destination.write(line),
      () => {},
    );
  const fd = process.stdout.fd ?? 1;
  // sonic-boom refuses a minLength not below its maxWrite (16 KiB by default).
  const stdout = pino.destination({ dest: fd, minLength: BLOCK_BYTES, maxWrite: 4 * BLOCK_BYTES, sync: false });
  const access = new GatheredLines(stdout);
  const timer = setInterval(() => access.flush(), FLUSH_MS).unref();
  // After pino's own exit hook (registered with the destination above) has written the destination's buffer; kept
  // after close(), as pino's is, for lines of requests still finishing.
  process.on('exit', () => access.writeOutSync(fd));
  const ordered: DestinationStream = {
    write(line: string) {
      access.release();
      stdout.write(line);
    },
  };
  return loggersOn(
    level,
    ordered,
    (line) => access.add(line),
    () => {
      clearInterval(timer);
      access.flush();
    },
  );
}

function loggersOn(
  level: string,
  sink: DestinationStream,
  writeAccess: (line: string) => void,
  close: () => void,
): Loggers {
  const logger = pino(
    { level, base: { svc: 'meshgate' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    sink,
  );
  return { logger, accessLog: { enabled: logger.isLevelEnabled('info'), write: writeAccess }, close };
}

/**
 * Access lines gathered into one string per block before they reach stdout's destination. sonic-boom measures the
 * UTF-8 length of the string it appends to on every write, so short lines written one by one into a block
 * flatten and scan the block again each time (~2 % of a proxied request's CPU; bench/README.md, proxy). A line of
 * the gateway's own goes out after the access lines gathered before it, so the order of lines is kept.
 */
class GatheredLines {
  #lines = '';

  constructor(private readonly stdout: ReturnType<typeof pino.destination>) {}

  add(line: string): void {
    this.#lines += line;
    if (this.#lines.length >= BLOCK_BYTES) this.release();
  }

  /** Hands what is gathered to the destination (which writes it once its own block fills, or on flush). */
  release(): void {
    if (this.#lines === '') return;
    const block = this.#lines;
    this.#lines = '';
    this.stdout.write(block);
  }

  flush(): void {
    this.release();
    this.stdout.flush();
  }

  /**
   * At exit, when the destination has written its buffer and no event loop is left to write through it. Partial
   * writes continue where they stopped; a reader that drains nothing for EXIT_WRITE_WAIT_MS loses the rest, and
   * stderr says how much.
   */
  writeOutSync(fd: number): void {
    let rest = Buffer.from(this.#lines);
    this.#lines = '';
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let waited = 0; rest.length > 0; ) {
      try {
        rest = rest.subarray(writeSync(fd, rest));
        waited = 0;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || waited >= EXIT_WRITE_WAIT_MS) {
          try {
            writeSync(2, `meshgate: ${rest.length} bytes of access log not written at exit: ${String(error)}\n`);
          } catch {
            // stderr is gone too: nothing is left to say it on.
          }
          return;
        }
        Atomics.wait(pause, 0, 0, EXIT_WRITE_PAUSE_MS);
        waited += EXIT_WRITE_PAUSE_MS;
      }
    }
  }
}
