/**
 * Warnings that repeat per request, folded: a dead upstream fails every request sent to it, and one line each
 * (hundreds a minute) buries everything else in the log. The first failure of a kind (`key`: its reason and what
 * failed, a deployment or a route) is written at once; the ones after it within `windowMs` are counted, and when
 * the window ends one line stands for them all — the last one's fields plus `suppressed`, how many were folded in
 * besides it — and a new window begins. A kind that went quiet for a whole window is forgotten, so what is kept is
 * bounded by the kinds failing at the moment. Each line carries its own request's fields (request id, path), so a
 * client's report still finds a line while the failure lasts.
 */
import type { Logger } from 'pino';

/** How long a kind of failure is folded after a line about it: at most one line per kind this often. */
export const FOLD_WINDOW_MS = 10_000;

type Fields = Record<string, unknown>;

interface Fold {
  /** Failures since the last line, the one a summary line shows excepted. */
  folded: number;
  last: { logger: Logger; fields: Fields; msg: string } | null;
  timer: NodeJS.Timeout;
}

export class FoldedWarnings {
  readonly #open = new Map<string, Fold>();

  constructor(private readonly windowMs = FOLD_WINDOW_MS) {}

  warn(logger: Logger, key: string, fields: Fields, msg: string): void {
    const fold = this.#open.get(key);
    if (fold) {
      if (fold.last) fold.folded++;
      fold.last = { logger, fields, msg };
      return;
    }
    logger.warn(fields, msg);
    this.#openWindow(key);
  }

  /** Writes what is folded now, and stops: the gateway is closing. */
  close(): void {
    for (const fold of this.#open.values()) {
      clearTimeout(fold.timer);
      this.#write(fold);
    }
    this.#open.clear();
  }

  #openWindow(key: string): void {
    // A timer only while the kind fails; unref'd, since folding alone must not keep a process alive.
    const timer = setTimeout(() => this.#closeWindow(key), this.windowMs).unref();
    this.#open.set(key, { folded: 0, last: null, timer });
  }

  #closeWindow(key: string): void {
    const fold = this.#open.get(key);
    this.#open.delete(key);
    if (fold && this.#write(fold)) this.#openWindow(key);
  }

  /** The fold's line, if anything was folded: the last failure's fields and the count besides it. */
  #write(fold: Fold): boolean {
    if (!fold.last) return false;
    const { logger, fields, msg } = fold.last;
    logger.warn({ ...fields, suppressed: fold.folded }, msg);
    return true;
  }
}
