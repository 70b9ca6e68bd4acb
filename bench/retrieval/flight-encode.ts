/**
 * The two steps the Flight stream's hand-written path replaced, in process,
 * each beside the way it was done before in the same run (CPU ns a row,
 * median of `reps` runs after two warm-ups), on the benchmark table
 * `(id int, region text, amount int, note text)`:
 *
 * - COPY OUT framing: the server's bytes (a CopyData message per row) in
 *   64 KiB socket reads, to the rows' text, by postgres/copy-out.ts against
 *   pg-copy-streams' `to()`, over the same fake connection;
 * - batch encoding: a 10 000-row batch of the same column buffers to its
 *   FlightData gRPC message, by ipc.ts (the body copied once into the
 *   message) against apache-arrow's assembly into a zeroed body, protobuf-es
 *   and Connect's envelope (test/helpers/flight-frames.ts).
 *
 * Never run by the test suite.
 *
 *   node --import tsx bench/retrieval/flight-encode.ts [rows=200000] [reps=15]
 */
import { PassThrough } from 'node:stream';
import { Schema } from 'apache-arrow';
import type { Connection } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { batchMessage } from '../../domains/retrieval/arrow/ipc.ts';
import { arrowField, type NamedType } from '../../domains/retrieval/arrow/types.ts';
import { columnWriter } from '../../domains/retrieval/arrow/writers.ts';
import type { CopyReader } from '../../domains/retrieval/sources/postgres/copy.ts';
import { CopyOut } from '../../domains/retrieval/sources/postgres/copy-out.ts';
import { connectEncodedBatch } from '../../test/helpers/flight-frames.ts';

const [rows = 200_000, reps = 15] = process.argv.slice(2).map(Number);
const BATCH = 10_000;
const REGIONS = ['north', 'south', 'east'];
const rowText = (i: number) => `${i + 1}\t${REGIONS[i % 3]}\t${(i * 37) % 1000}\trow-${i + 1}\n`;

function message(code: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(code, 0, 'latin1');
  header.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

const wire = Buffer.concat([
  message('H', Buffer.from([0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0])),
  ...Array.from({ length: rows }, (_, i) => message('d', Buffer.from(rowText(i)))),
  message('c', Buffer.alloc(0)),
  message('C', Buffer.from('COPY 0\0')),
  message('Z', Buffer.from('I')),
]);

/** The rows' bytes of each chunk, as a batch: what copy-out.ts hands a converter, and nothing more. */
const rowBytes: CopyReader<number> = {
  push(chunk, done = []) {
    done.push(chunk.length);
    return done;
  },
  end: () => null,
};

/** Reads the COPY started by `start` over a fake connection fed 64 KiB reads; returns the text bytes read. */
async function copyOut(start: (connection: Connection) => AsyncIterable<Buffer | number>): Promise<number> {
  const socket = new PassThrough({ highWaterMark: 1 << 16 });
  socket.on('data', () => {});
  const stream = start({ stream: socket, query: () => {} } as unknown as Connection);
  const feed = (async () => {
    for (let p = 0; p < wire.length; p += 1 << 16) {
      if (!socket.write(Buffer.from(wire.subarray(p, p + (1 << 16)))))
        await new Promise((r) => socket.once('drain', r));
    }
    socket.end();
  })();
  let bytes = 0;
  for await (const piece of stream) bytes += typeof piece === 'number' ? piece : piece.length;
  await feed;
  return bytes;
}

/** Median CPU ns a row of `run` over `reps` runs, after two warm-ups. */
async function measure(run: () => Promise<unknown> | unknown): Promise<number> {
  await run();
  await run();
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) {
    const before = process.cpuUsage();
    await run();
    const used = process.cpuUsage(before);
    samples.push(((used.user + used.system) * 1000) / rows);
  }
  return samples.sort((a, b) => a - b)[samples.length >> 1] as number;
}

const columns: NamedType[] = [
  { name: 'id', type: { kind: 'int', bits: 32 } },
  { name: 'region', type: { kind: 'utf8' } },
  { name: 'amount', type: { kind: 'int', bits: 32 } },
  { name: 'note', type: { kind: 'utf8' } },
];
const schema = new Schema(columns.map(arrowField));
const writers = columns.map((c) => columnWriter(c.type));
for (let i = 0; i < BATCH; i++) {
  const [id, region, amount, note] = rowText(i).trimEnd().split('\t');
  const values = [Number(id), region, Number(amount), note];
  for (let c = 0; c < values.length; c++) writers[c]?.push(values[c]);
}
const batch = writers.map((w) => w.finish());
const encode = (encoder: () => Uint8Array) => () => {
  for (let done = 0; done < rows; done += BATCH) encoder();
};

const copyStreams = await measure(() =>
  copyOut((connection) => {
    const stream = copyTo('COPY t TO STDOUT');
    stream.submit(connection);
    return stream;
  }),
);
const copyOutStream = await measure(() =>
  copyOut((connection) => {
    const copy = new CopyOut('COPY t TO STDOUT', rowBytes);
    copy.submit(connection);
    return copy.batches(new AbortController().signal);
  }),
);
const connect = await measure(encode(() => connectEncodedBatch(schema, batch, BATCH)));
const byHand = await measure(encode(() => batchMessage(schema, batch, BATCH).frame));
process.stdout.write(
  `COPY OUT framing: pg-copy-out ${copyOutStream.toFixed(0)} ns/row, pg-copy-streams ${copyStreams.toFixed(0)} ` +
    `ns/row (${(copyOutStream / copyStreams).toFixed(2)}×)\n` +
    `batch → FlightData gRPC message: by hand ${byHand.toFixed(1)} ns/row, apache-arrow + protobuf-es + Connect ` +
    `${connect.toFixed(1)} ns/row (${(byHand / connect).toFixed(2)}×), ${rows} rows, ${BATCH}-row batches\n`,
);
