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
import type { NodeResponse } from '../../gateway/http/context.ts';

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

/** Open exchanges and the checks that admitted them, re-run every `sweepMs` while any is open. */
export class OpenStreams {
  readonly #open = new Map<Endable, () => Promise<boolean>>();
  #timer: NodeJS.Timeout | null = null;
  #sweeping = false;

  constructor(private readonly sweepMs: number) {}

  track(stream: Endable, stillAllowed: () => Promise<boolean>): void {
    if (stream.destroyed) return;
    this.#open.set(stream, stillAllowed);
    stream.once('close', () => {
      this.#open.delete(stream);
      if (this.#open.size === 0) this.#stop();
    });
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.sweep(), this.sweepMs);
      this.#timer.unref();
    }
  }

  /** Re-runs every open exchange's check and ends the ones now refused (a failing check counts as refused). */
  async sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      for (const [stream, stillAllowed] of this.#open) {
        if (!(await stillAllowed().catch(() => false))) cut(stream);
      }
    } finally {
      this.#sweeping = false;
    }
  }

  close(): void {
    this.#stop();
    for (const stream of this.#open.keys()) cut(stream);
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
