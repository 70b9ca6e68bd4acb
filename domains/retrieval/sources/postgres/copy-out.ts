/**
 * `COPY … TO STDOUT` as a readable stream of the rows' text, read off the
 * connection's socket with the CopyData framing removed in place. The
 * server sends each row as its own CopyData message (PostgreSQL manual,
 * "Message Flow", COPY Operations, and "Message Formats"): a `d`, a 32-bit
 * length and the row. pg-copy-streams' `to()` parses each message through
 * a buffer list, slicing one Buffer per row and joining them again; here
 * the rows of a socket chunk are moved together over their headers and
 * pushed as one slice of it, so a row costs a few byte reads. A row a chunk
 * ends inside is passed on as its bytes arrive (a large value is never
 * gathered, and each byte is moved once); only a message head or another
 * message a chunk ends inside is kept, in pieces joined once it is whole.
 *
 * The connection is taken over as pg-copy-streams does (pg calls
 * `submit`): pg's data listener is set aside while the COPY runs; at
 * CopyDone, or at an ErrorResponse, it is given back with the bytes not
 * yet parsed, so pg reads CommandComplete or the error and ReadyForQuery
 * and reports them here (handleCommandComplete, handleError).
 */
import { Readable, type ReadableOptions } from 'node:stream';
import type { Connection as PgConnection } from 'pg';

const COPY_DATA = 0x64;
const COPY_DONE = 0x63;
const ERROR_RESPONSE = 0x45;
/** Messages the server may send during COPY OUT besides the data (CopyOutResponse first, then asynchronous ones). */
const PASSED_OVER = new Set([0x48, 0x4e, 0x53, 0x41]);
/** A message's type byte and 32-bit length (the length counts itself). */
const HEADER = 5;

export class CopyOutStream extends Readable {
  #connection: PgConnection | null = null;
  #pgData: ((chunk: Buffer) => void) | null = null;
  /** Bytes of a row's CopyData that later chunks still bring (a row is passed on as it arrives). */
  #rowLeft = 0;
  /** The start of a message (its head, or a whole message other than a row) that a chunk ended inside. */
  #pieces: Buffer[] = [];
  #piecesLength = 0;
  #wanted = false;
  #reading = false;
  readonly #onReadable = () => this.#forward();

  constructor(
    private readonly text: string,
    options?: ReadableOptions,
  ) {
    super(options);
  }

  /** Called by pg when the query's turn comes. */
  submit(connection: PgConnection): void {
    this.#connection = connection;
    const socket = connection.stream;
    this.#pgData = socket.listeners('data')[0] as (chunk: Buffer) => void;
    socket.removeListener('data', this.#pgData);
    socket.pause();
    socket.on('readable', this.#onReadable);
    connection.query(this.text);
  }

  override _read(): void {
    this.#wanted = true;
    this.#forward();
  }

  handleError(error: Error): void {
    this.destroy(error);
  }

  handleCommandComplete(): void {}

  handleReadyForQuery(): void {}

  #forward(): void {
    if (this.#reading || !this.#wanted) return;
    this.#reading = true;
    while (this.#wanted && this.#connection) {
      const chunk = this.#connection.stream.read() as Buffer | null;
      if (chunk === null) break;
      this.#wanted = this.#parse(chunk);
    }
    this.#reading = false;
  }

  /** Whether more is wanted (push's answer) after this chunk. Rows are moved to the chunk's start and pushed. */
  #parse(chunk: Buffer): boolean {
    const resumed = this.#resume(chunk);
    if (typeof resumed === 'boolean') return resumed;
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
        return this.#end(chunk, out, chunk.subarray(p, end), chunk.subarray(end));
      }
    }
    return out > 0 ? this.push(chunk.subarray(0, out)) : true;
  }

  /** Where this chunk's own messages begin, after what earlier chunks began; a boolean when the chunk is used up. */
  #resume(chunk: Buffer): { p: number; out: number } | boolean {
    if (this.#rowLeft > 0) {
      // The rest of a row: already where it is pushed from.
      const p = Math.min(this.#rowLeft, chunk.length);
      this.#rowLeft -= p;
      return { p, out: p };
    }
    if (this.#piecesLength === 0) return { p: 0, out: 0 };
    const head = this.#completeHead(chunk);
    if (head === null) return true;
    if (head.message === null) {
      const out = this.#rowBytes(chunk, head.used, 0, head.rowLength);
      return { p: head.used + out, out };
    }
    if (PASSED_OVER.has(head.message[0] as number)) return { p: head.used, out: 0 };
    return this.#end(chunk, 0, head.message, chunk.subarray(head.used));
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
   * rows moved to the chunk's start (`out` bytes) go first.
   */
  #end(chunk: Buffer, out: number, message: Buffer, after: Buffer): false {
    if (out > 0) this.push(chunk.subarray(0, out));
    const code = message[0] as number;
    this.#giveBack(code === COPY_DONE ? after : Buffer.concat([message, after]), code !== ERROR_RESPONSE);
    return false;
  }

  /** Hands the connection back to pg with the bytes it has still to read; the rows end unless the server failed. */
  #giveBack(rest: Buffer, done: boolean): void {
    const connection = this.#connection as PgConnection;
    const pgData = this.#pgData as (chunk: Buffer) => void;
    this.#connection = null;
    const socket = connection.stream;
    socket.removeListener('readable', this.#onReadable);
    socket.on('data', pgData);
    if (done) this.push(null);
    pgData(rest);
    // pg's reader may pause the socket while it parses; reading resumes once this turn is over.
    process.nextTick(() => socket.resume());
  }
}
