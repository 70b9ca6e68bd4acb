/**
 * The COPY OUT reader (domains/retrieval/sources/postgres/copy-out.ts) on the
 * server's bytes as PostgreSQL frames them (CopyOutResponse, a CopyData per
 * row, CopyDone, then CommandComplete and ReadyForQuery, which are pg's),
 * cut into socket chunks at every byte, each chunk read on its own: the
 * rows' text comes out whole and in order, and pg gets back exactly the
 * bytes after CopyDone, or the ErrorResponse and what follows it, with the
 * read failing — however the chunks cut those messages too. Each chunk's
 * rows go to the converter (here one that keeps them, a batch a chunk, so
 * the socket is paused and resumed as batches wait and are taken).
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { Connection } from 'pg';
import type { CopyReader } from '../../../../../../domains/retrieval/sources/postgres/copy.ts';
import { CopyOut } from '../../../../../../domains/retrieval/sources/postgres/copy-out.ts';

/** Each chunk's rows as a batch of their own (a copy: the chunk is the socket's). */
const pieces = (): CopyReader<Buffer> => ({
  push(chunk, done = []) {
    done.push(Buffer.from(chunk));
    return done;
  },
  end: () => null,
});

function message(code: string, body: Buffer | string): Buffer {
  const bytes = Buffer.from(body);
  const header = Buffer.alloc(5);
  header.write(code, 0, 'latin1');
  header.writeUInt32BE(bytes.length + 4, 1);
  return Buffer.concat([header, bytes]);
}

const ROWS = ['1\tnorth\t37\trow-1\n', '2\tsouth\t74\trow-2\n', `3\t${'x'.repeat(300)}\t\\N\trow-3\n`, '4\t\t0\t\n'];
const AFTER = Buffer.concat([message('C', 'COPY 4\0'), message('Z', 'I')]);
const NOTICE = message('N', 'SNOTICE\0\0');

/** Writes each chunk after the reader has taken the one before, as a socket delivers them one read at a time. */
async function deliver(socket: PassThrough, chunks: readonly Buffer[]): Promise<void> {
  for (const chunk of chunks) {
    socket.write(Buffer.from(chunk));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Runs a COPY over `chunks` of the server's bytes; the text read and the bytes handed back to pg. */
async function copyOut(chunks: readonly Buffer[]): Promise<{ text: string; toPg: Buffer }> {
  const socket = new PassThrough();
  const toPg: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => toPg.push(chunk));
  const copy = new CopyOut('COPY t TO STDOUT', pieces());
  const connection = { stream: socket, query: () => {} } as unknown as Connection;
  copy.submit(connection);
  const got: Buffer[] = [];
  const read = (async () => {
    for await (const piece of copy.batches(new AbortController().signal)) got.push(piece);
  })();
  await deliver(socket, chunks);
  await read;
  return { text: Buffer.concat(got).toString(), toPg: Buffer.concat(toPg) };
}

test('rows cut into chunks at every byte come out whole; pg gets the bytes after CopyDone', async () => {
  const wire = Buffer.concat([
    message('H', Buffer.from([0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0])),
    message('d', ROWS[0] as string),
    NOTICE,
    ...ROWS.slice(1).map((row) => message('d', row)),
    message('c', ''),
    AFTER,
  ]);
  for (let cut = 0; cut <= wire.length; cut++) {
    const { text, toPg } = await copyOut([wire.subarray(0, cut), wire.subarray(cut)]);
    assert.equal(text, ROWS.join(''), `cut at ${cut}`);
    assert.deepEqual(toPg, AFTER, `cut at ${cut}`);
  }
  const bytewise = await copyOut([...wire].map((b) => Buffer.from([b])));
  assert.equal(bytewise.text, ROWS.join(''));
  assert.deepEqual(bytewise.toPg, AFTER);
});

test('a row of 4 MB over a thousand chunks, and a notice cut across chunks, come out whole', async () => {
  const large = `5\t${'y'.repeat(4 * 1024 * 1024)}\t1\trow-5\n`;
  const longNotice = message('N', `SNOTICE\0M${'n'.repeat(5000)}\0\0`);
  const wire = Buffer.concat([
    message('d', ROWS[0] as string),
    message('d', large),
    longNotice,
    message('c', ''),
    AFTER,
  ]);
  const chunks = Array.from({ length: Math.ceil(wire.length / 4099) }, (_, i) =>
    wire.subarray(i * 4099, (i + 1) * 4099),
  );
  const { text, toPg } = await copyOut(chunks);
  assert.equal(text.length, (ROWS[0] as string).length + large.length);
  assert.equal(text, (ROWS[0] as string) + large);
  assert.deepEqual(toPg, AFTER);
});

test('an ErrorResponse mid-COPY goes to pg with what follows, after the rows before it', async () => {
  const failure = Buffer.concat([message('E', 'SERROR\0Mdivision by zero\0\0'), message('Z', 'I')]);
  const wire = Buffer.concat([
    message('H', Buffer.from([0, 0, 0])),
    message('d', ROWS[0] as string),
    message('d', ROWS[1] as string),
    failure,
  ]);
  for (let cut = 0; cut <= wire.length; cut++) {
    const socket = new PassThrough();
    const toPg: Buffer[] = [];
    // pg parses the ErrorResponse it is handed and fails the query.
    const handedBack = new Promise<void>((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        toPg.push(chunk);
        if (Buffer.concat(toPg).length === failure.length) resolve();
      }),
    );
    const copy = new CopyOut('COPY t TO STDOUT', pieces());
    copy.submit({ stream: socket, query: () => {} } as unknown as Connection);
    const text: Buffer[] = [];
    const read = (async () => {
      for await (const piece of copy.batches(new AbortController().signal)) text.push(piece);
    })();
    await deliver(socket, [wire.subarray(0, cut), wire.subarray(cut)]);
    await handedBack;
    // The rows before the error are taken before pg fails the query (a batch is taken as soon as it waits).
    await new Promise((resolve) => setImmediate(resolve));
    copy.handleError(new Error('division by zero'));
    await assert.rejects(read, /division by zero/);
    assert.equal(Buffer.concat(text).toString(), ROWS.slice(0, 2).join(''), `cut at ${cut}`);
    assert.deepEqual(Buffer.concat(toPg), failure, `cut at ${cut}`);
  }
});
