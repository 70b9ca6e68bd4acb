/**
 * `COPY … TO STDOUT` as a readable stream of the rows' text, read off the
 * connection's socket with the CopyData framing removed in place. The
 * server sends each row as its own CopyData message (PostgreSQL manual,
 * "Message Flow", COPY Operations, and "Message Formats"): a `d`, a 32-bit
 * length and the row. pg-copy-streams' `to()` parses each message through
 * a buffer list, slicing one Buffer per row and joining them again; here
 * the rows of a socket chunk are moved together over their headers and
 * pushed as one slice of it, so a row costs a few byte reads. Only a
 * message a chunk ends inside is joined with the next chunk's start.
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
  /** The start of the message the last chunk ended inside. */
  #held: Buffer | null = null;
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

  /** Whether more is wanted (push's answer) after this chunk. */
  #parse(chunk: Buffer): boolean {
    let start = 0;
    const held = this.#held;
    if (held !== null) {
      const header = held.length >= HEADER ? held : Buffer.concat([held, chunk.subarray(0, HEADER - held.length)]);
      const take = header.length < HEADER ? chunk.length + 1 : 1 + header.readUInt32BE(1) - held.length;
      if (take > chunk.length) {
        this.#held = Buffer.concat([held, chunk]);
        return true;
      }
      this.#held = null;
      const message = Buffer.concat([held, chunk.subarray(0, take)]);
      const wanted = this.#messages(message, 0);
      if (this.#connection === null) return wanted;
      start = take;
    }
    return this.#messages(chunk, start);
  }

  /** The whole messages of chunk[start…): rows pushed as one slice, the rest held; false when no more is wanted. */
  #messages(chunk: Buffer, start: number): boolean {
    let p = start;
    let out = start;
    let ended: (() => void) | null = null;
    while (p + HEADER <= chunk.length) {
      const code = chunk[p] as number;
      const end = p + 1 + chunk.readUInt32BE(p + 1);
      if (end > chunk.length) break;
      if (code === COPY_DATA) {
        chunk.copyWithin(out, p + HEADER, end);
        out += end - p - HEADER;
      } else if (!PASSED_OVER.has(code)) {
        // CopyDone ends the rows; an ErrorResponse (or anything unexpected) is pg's to read, as is what follows.
        const rest = chunk.subarray(code === COPY_DONE ? end : p);
        ended = () => this.#giveBack(rest, code !== ERROR_RESPONSE);
        break;
      }
      p = end;
    }
    const wanted = out > start ? this.push(chunk.subarray(start, out)) : true;
    if (ended) {
      ended();
      return false;
    }
    if (p < chunk.length) this.#held = chunk.subarray(p);
    return wanted;
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
