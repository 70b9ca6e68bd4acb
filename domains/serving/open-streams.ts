/**
 * Access that lasts: a proxied exchange that stays open (a websocket, an SSE
 * stream or any long HTTP response on a runtime URL) is not a one-time
 * decision. Each is registered with the check that admitted it, re-run every
 * `sweepMs` while any is open, and ended once the check fails (the user
 * disabled or signed out, the token or PAT revoked, the grant revoked, the
 * deployment deleted or made private). An exchange thus never outlives the
 * access — nor the credential — it was opened with by more than one sweep.
 */
import { constants, type ServerHttp2Stream } from 'node:http2';
import type { NodeResponse, RequestContext } from '../../gateway/http/context.ts';
import { type CloseHook, onResponseClose } from '../../gateway/http/response-close.ts';

/** What a sweep can end: a websocket's socket, an HTTP/2 stream, an HTTP/1.1 response. */
export interface Endable {
  readonly destroyed: boolean;
  destroy(): void;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Ends an exchange so its client can tell it was cut. An HTTP/2 stream is reset with CANCEL (RFC 9113 §7): the
 * NO_ERROR reset `destroy()` sends on a response without END_STREAM reads as a complete body to some clients
 * (undici's). A socket or an HTTP/1.1 response is destroyed: the connection closes before the body's end.
 */
function cut(stream: Endable): void {
  if ('rstCode' in stream) (stream as ServerHttp2Stream).close(constants.NGHTTP2_CANCEL);
  else stream.destroy();
}

/** One open exchange in OpenStreams' list; a proxied response's is told of its close as the request's hook. */
class OpenEntry implements CloseHook {
  newer: OpenEntry | null = null;
  older: OpenEntry | null = null;
  open = true;

  constructor(
    private readonly list: OpenStreams,
    readonly stream: Endable,
    readonly stillAllowed: () => Promise<boolean>,
  ) {}

  responseClosed(): void {
    this.list.untrack(this);
  }
}

/**
 * Open exchanges and the checks that admitted them, re-run every `sweepMs` while any is open. A list linked through
 * the entries, not a Map: a long-lived Map given an entry and losing it per request leaves each replaced hash table
 * (in V8, an obsolete table keeps its entries and a link to its successor) holding requests of its moment; once one
 * such table is in the old generation, every scavenge treats what it points to as live, and each request's objects
 * were promoted — about a third of what a proxied request allocated, and the collections that follow
 * (bench/README.md, proxy). An entry unlinked drops its links, so a dead entry keeps nothing younger alive.
 */
export class OpenStreams {
  #newest: OpenEntry | null = null;
  #count = 0;
  #timer: NodeJS.Timeout | null = null;
  #sweeping = false;

  constructor(private readonly sweepMs: number) {}

  /** An exchange on its own stream or socket (a websocket): untracked when it closes. */
  track(stream: Endable, stillAllowed: () => Promise<boolean>): void {
    if (stream.destroyed) return;
    const entry = this.#link(stream, stillAllowed);
    stream.once('close', () => this.untrack(entry));
  }

  /** A request's response (responseStream), untracked by the request's one close listener (onResponseClose). */
  trackResponse(ctx: RequestContext, stillAllowed: () => Promise<boolean>): void {
    const stream = responseStream(ctx.res);
    if (stream.destroyed) return;
    onResponseClose(ctx, this.#link(stream, stillAllowed));
  }

  #link(stream: Endable, stillAllowed: () => Promise<boolean>): OpenEntry {
    const entry = new OpenEntry(this, stream, stillAllowed);
    entry.older = this.#newest;
    if (this.#newest) this.#newest.newer = entry;
    this.#newest = entry;
    this.#count++;
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.sweep(), this.sweepMs);
      this.#timer.unref();
    }
    return entry;
  }

  /** The entry's exchange closed (its own listener, or its request's hook); a second call does nothing. */
  untrack(entry: OpenEntry): void {
    if (!entry.open) return;
    entry.open = false;
    if (entry.newer) entry.newer.older = entry.older;
    else this.#newest = entry.older;
    if (entry.older) entry.older.newer = entry.newer;
    entry.newer = null;
    entry.older = null;
    if (--this.#count === 0) this.#stop();
  }

  /** The open entries, newest first: a sweep's checks are awaited, and entries come and go meanwhile. */
  #entries(): OpenEntry[] {
    const entries: OpenEntry[] = [];
    for (let entry = this.#newest; entry; entry = entry.older) entries.push(entry);
    return entries;
  }

  /** Re-runs every open exchange's check and ends the ones now refused (a failing check counts as refused). */
  async sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      for (const entry of this.#entries()) {
        if (!entry.open) continue;
        if (!(await entry.stillAllowed().catch(() => false))) cut(entry.stream);
      }
    } finally {
      this.#sweeping = false;
    }
  }

  close(): void {
    this.#stop();
    for (const entry of this.#entries()) cut(entry.stream);
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

/** The exchange a response runs on: its HTTP/2 stream (ending it resets that stream only), or the HTTP/1.1 response. */
export function responseStream(res: NodeResponse): Endable {
  return 'stream' in res ? res.stream : res;
}
