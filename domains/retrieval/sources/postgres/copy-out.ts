/**
 * `COPY … TO STDOUT` read off the connection's socket with the CopyData
 * framing removed in place, each socket chunk's rows handed straight to a
 * converter (a CopyReader: JSON arrays, Arrow record batches) and the
 * batches it completes queued for the consumer. The server sends each row
 * as its own CopyData message (PostgreSQL manual, "Message Flow", COPY
 * Operations, and "Message Formats"): a `d`, a 32-bit length and the row.
 * pg-copy-streams' `to()` parses each message through a buffer list,
 * slicing one Buffer per row and joining them again; here the rows of a
 * socket chunk are moved together over their headers and converted as one
 * slice of it, so a row costs a few byte reads. A row a chunk ends inside
 * is passed on as its bytes arrive (a large value is never gathered, and
 * each byte is moved once); only a message head or another message a chunk
 * ends inside is kept, in pieces joined once it is whole.
 *
 * A socket read costs no stream of its own: the chunk is converted in the
 * socket's `data` event, and only a finished batch crosses to the consumer
 * (one promise a batch, not a readable stream's push, tick and promise a
 * chunk: most of what a Flight read allocated, bench/README.md retrieval).
 * The socket is paused while BATCHES_AHEAD batches wait, so it is read only
 * as fast as batches are taken.
 *
 * The connection is taken over as pg-copy-streams does (pg calls
 * `submit`): pg's data listener is set aside while the COPY runs; at
 * CopyDone, or at an ErrorResponse, it is given back with the bytes not
 * yet parsed, so pg reads CommandComplete or the error and ReadyForQuery
 * and reports them here (handleCommandComplete, handleError).
 */
import type { Connection as PgConnection } from 'pg';
import type { CopyReader } from './copy.ts';

const COPY_DATA = 0x64;
const COPY_DONE = 0x63;
const ERROR_RESPONSE = 0x45;
/** Messages the server may send during COPY OUT besides the data (CopyOutResponse first, then asynchronous ones). */
const PASSED_OVER = new Set([0x48, 0x4e, 0x53, 0x41]);
/** A message's type byte and 32-bit length (the length counts itself). */
const HEADER = 5;
/** Batches converted ahead of the consumer before the socket is paused. */
const BATCHES_AHEAD = 2;

/** A COPY's batches: given to pg as the query (`client.query(copy)`), read with `batches()`. */
export class CopyOut<T> {
  #connection: PgConnection | null = null;
  #pgData: ((chunk: Buffer) => void) | null = null;
  /** Bytes of a row's CopyData that later chunks still bring (a row is passed on as it arrives). */
  #rowLeft = 0;
  /** The start of a message (its head, or a whole message other than a row) that a chunk ended inside. */
  #pieces: Buffer[] = [];
  #piecesLength = 0;
  /** Batches converted and not yet taken, oldest first (at most a few: the socket is paused past BATCHES_AHEAD). */
  readonly #queue: T[] = [];
  #done = false;
  #failed = false;
  #error: unknown = null;
  #paused = false;
  #waiting: (() => void) | null = null;
  readonly #onData = (chunk: Buffer) => this.#data(chunk);
  readonly #wake = () => this.#signal();

  constructor(
    private readonly text: string,
    private readonly reader: CopyReader<T>,
  ) {}

  /** Called by pg when the query's turn comes. */
  submit(connection: PgConnection): void {
    this.#connection = connection;
    const socket = connection.stream;
    this.#pgData = socket.listeners('data')[0] as (chunk: Buffer) => void;
    socket.removeListener('data', this.#pgData);
    socket.on('data', this.#onData);
    connection.query(this.text);
  }

  handleError(error: Error): void {
    this.#fail(error);
  }

  handleCommandComplete(): void {}

  handleReadyForQuery(): void {}

  /**
   * The batches, then the converter's last one; throws the converter's or the server's error, or the signal's
   * reason once it aborts.
   */
  async *batches(signal: AbortSignal): AsyncGenerator<T> {
    signal.addEventListener('abort', this.#wake);
    try {
      for (;;) {
        signal.throwIfAborted();
        if (this.#failed) throw this.#error;
        if (this.#queue.length > 0) {
          const batch = this.#queue.shift() as T;
          if (this.#queue.length < BATCHES_AHEAD) this.#resumeSocket();
          yield batch;
        } else if (this.#done) break;
        else
          await new Promise<void>((resolve) => {
            this.#waiting = resolve;
            this.#resumeSocket();
          });
      }
    } finally {
      signal.removeEventListener('abort', this.#wake);
    }
    const last = this.reader.end();
    if (last) {
      signal.throwIfAborted();
      yield last;
    }
  }

  #signal(): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.();
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#error = error;
    this.#signal();
  }

  #resumeSocket(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#connection?.stream.resume();
  }

  /** One socket chunk: its rows converted; the socket paused while enough batches wait. */
  #data(chunk: Buffer): void {
    try {
      this.#parse(chunk);
    } catch (error) {
      // The converter refused the rows (too large, not what the SELECT names): the read fails, nothing more is read.
      this.#fail(error);
    }
    const socket = this.#connection?.stream;
    if (socket && (this.#failed || this.#queue.length >= BATCHES_AHEAD)) {
      this.#paused = true;
      socket.pause();
    }
  }

  /** The rows of src (whole or cut anywhere) to the converter; the batches they complete queued for the consumer. */
  #rows(src: Buffer): void {
    const before = this.#queue.length;
    this.reader.push(src, this.#queue);
    if (this.#queue.length > before) this.#signal();
  }

  /** Converts this chunk's rows, moved to the chunk's start. */
  #parse(chunk: Buffer): void {
    const resumed = this.#start(chunk);
    if (resumed === null) return;
    let { p, out } = resumed;
    while (p < chunk.length) {
      if (p + HEADER > chunk.length) {
        this.#hold(chunk.subarray(p));
        break;
      }
      const code = chunk[p] as number;
      const end = p + 1 + chunk.readUInt32BE(p + 1);
      if (code === COPY_DATA) {
        const moved = this.#rowBytes(chunk, p + HEADER, out, end - p - HEADER);
        out += moved;
        p += HEADER + moved;
      } else if (end > chunk.length) {
        this.#hold(chunk.subarray(p));
        break;
      } else if (PASSED_OVER.has(code)) {
        p = end;
      } else {
        this.#end(chunk, out, chunk.subarray(p, end), chunk.subarray(end));
        return;
      }
    }
    if (out > 0) this.#rows(chunk.subarray(0, out));
  }

  /** Where this chunk's own messages begin, after what earlier chunks began; null when the chunk is used up. */
  #start(chunk: Buffer): { p: number; out: number } | null {
    if (this.#rowLeft > 0) {
      // The rest of a row: already where it is converted from.
      const p = Math.min(this.#rowLeft, chunk.length);
      this.#rowLeft -= p;
      return { p, out: p };
    }
    if (this.#piecesLength === 0) return { p: 0, out: 0 };
    const head = this.#completeHead(chunk);
    if (head === null) return null;
    if (head.message === null) {
      const out = this.#rowBytes(chunk, head.used, 0, head.rowLength);
      return { p: head.used + out, out };
    }
    if (PASSED_OVER.has(head.message[0] as number)) return { p: head.used, out: 0 };
    this.#end(chunk, 0, head.message, chunk.subarray(head.used));
    return null;
  }

  /** Moves a row's bytes found in chunk[from…] to chunk[to…]; what the chunk lacks is left for the next ones. */
  #rowBytes(chunk: Buffer, from: number, to: number, rowLength: number): number {
    const here = Math.min(rowLength, chunk.length - from);
    if (from !== to) chunk.copyWithin(to, from, from + here);
    this.#rowLeft = rowLength - here;
    return here;
  }

  #hold(piece: Buffer): void {
    this.#pieces.push(piece);
    this.#piecesLength += piece.length;
  }

  /**
   * Completes the held message head from the chunk's start: a row's head gives the row's length (its bytes follow),
   * any other message is completed whole. Null when the chunk ends first (its bytes are held too).
   */
  #completeHead(chunk: Buffer): { used: number; rowLength: number; message: Buffer | null } | null {
    let used = 0;
    if (this.#piecesLength < HEADER) {
      used = Math.min(HEADER - this.#piecesLength, chunk.length);
      this.#hold(chunk.subarray(0, used));
      if (this.#piecesLength < HEADER) return null;
    }
    // The head whole in the first piece, joined once per message at most.
    if ((this.#pieces[0] as Buffer).length < HEADER) this.#pieces = [Buffer.concat(this.#pieces, this.#piecesLength)];
    const head = this.#pieces[0] as Buffer;
    const length = 1 + head.readUInt32BE(1);
    if (head[0] === COPY_DATA) {
      // Only a row's head is ever held: its bytes are passed on as they come.
      this.#pieces = [];
      this.#piecesLength = 0;
      return { used, rowLength: length - HEADER, message: null };
    }
    const missing = Math.min(length - this.#piecesLength, chunk.length - used);
    this.#hold(chunk.subarray(used, used + missing));
    used += missing;
    if (this.#piecesLength < length) return null;
    const message = Buffer.concat(this.#pieces, this.#piecesLength);
    this.#pieces = [];
    this.#piecesLength = 0;
    return { used, rowLength: 0, message };
  }

  /**
   * CopyDone ends the rows; an ErrorResponse (or anything unexpected) is pg's to read, with all that follows it. The
   * rows moved to the chunk's start (`out` bytes) are converted first.
   */
  #end(chunk: Buffer, out: number, message: Buffer, after: Buffer): void {
    if (out > 0) this.#rows(chunk.subarray(0, out));
    const code = message[0] as number;
    this.#giveBack(code === COPY_DONE ? after : Buffer.concat([message, after]), code !== ERROR_RESPONSE);
  }

  /** Hands the connection back to pg with the bytes it has still to read; the rows end unless the server failed. */
  #giveBack(rest: Buffer, done: boolean): void {
    const connection = this.#connection as PgConnection;
    const pgData = this.#pgData as (chunk: Buffer) => void;
    this.#connection = null;
    const socket = connection.stream;
    socket.removeListener('data', this.#onData);
    socket.on('data', pgData);
    if (done) {
      this.#done = true;
      this.#signal();
    }
    pgData(rest);
    // pg's reader may pause the socket while it parses, and it may be paused here; reading resumes after this turn.
    process.nextTick(() => socket.resume());
  }
}
