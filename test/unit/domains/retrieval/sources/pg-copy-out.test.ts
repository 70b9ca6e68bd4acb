/**
 * The COPY OUT reader (domains/retrieval/sources/pg-copy-out.ts) on the
 * server's bytes as PostgreSQL frames them (CopyOutResponse, a CopyData per
 * row, CopyDone, then CommandComplete and ReadyForQuery, which are pg's),
 * cut into socket chunks at every byte: the rows' text comes out whole and
 * in order, and pg gets back exactly the bytes after CopyDone, or the
 * ErrorResponse and what follows it, with the stream failing.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { Connection } from 'pg';
import { CopyOutStream } from '../../../../../domains/retrieval/sources/pg-copy-out.ts';

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

/** Runs a COPY over `chunks` of the server's bytes; the text read and the bytes handed back to pg. */
async function copyOut(chunks: readonly Buffer[]): Promise<{ text: string; toPg: Buffer; error?: Error }> {
  const socket = new PassThrough();
  const toPg: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => toPg.push(chunk));
  const stream = new CopyOutStream('COPY t TO STDOUT', { highWaterMark: 64 });
  const connection = { stream: socket, query: () => {} } as unknown as Connection;
  stream.submit(connection);
  for (const chunk of chunks) socket.write(chunk);
  socket.end();
  const got: Buffer[] = [];
  try {
    for await (const piece of stream) got.push(piece as Buffer);
  } catch (error) {
    return { text: Buffer.concat(got).toString(), toPg: Buffer.concat(toPg), error: error as Error };
  }
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
    const chunks = [wire.subarray(0, cut), wire.subarray(cut)].map((c) => Buffer.from(c));
    const { text, toPg } = await copyOut(chunks);
    assert.equal(text, ROWS.join(''), `cut at ${cut}`);
    assert.deepEqual(toPg, AFTER, `cut at ${cut}`);
  }
  const bytewise = await copyOut([...wire].map((b) => Buffer.from([b])));
  assert.equal(bytewise.text, ROWS.join(''));
  assert.deepEqual(bytewise.toPg, AFTER);
});

test('an ErrorResponse mid-COPY goes to pg with what follows, after the rows before it', async () => {
  const failure = Buffer.concat([message('E', 'SERROR\0Mdivision by zero\0\0'), message('Z', 'I')]);
  const wire = Buffer.concat([
    message('H', Buffer.from([0, 0, 0])),
    message('d', ROWS[0] as string),
    message('d', ROWS[1] as string),
    failure,
  ]);
  for (let cut = 0; cut <= wire.length; cut += 7) {
    const socket = new PassThrough();
    const toPg: Buffer[] = [];
    // pg parses the ErrorResponse it is handed and fails the query.
    const handedBack = new Promise<void>((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        toPg.push(chunk);
        if (Buffer.concat(toPg).length === failure.length) resolve();
      }),
    );
    const stream = new CopyOutStream('COPY t TO STDOUT');
    stream.submit({ stream: socket, query: () => {} } as unknown as Connection);
    const text: Buffer[] = [];
    stream.on('data', (piece: Buffer) => text.push(piece));
    stream.on('error', () => {});
    socket.write(Buffer.from(wire.subarray(0, cut)));
    socket.write(Buffer.from(wire.subarray(cut)));
    await handedBack;
    stream.handleError(new Error('division by zero'));
    await new Promise((resolve) => stream.once('close', resolve));
    assert.equal(Buffer.concat(text).toString(), ROWS.slice(0, 2).join(''), `cut at ${cut}`);
    assert.deepEqual(Buffer.concat(toPg), failure, `cut at ${cut}`);
    assert.equal(stream.errored?.message, 'division by zero');
  }
});
