/**
 * COPY text → JSON lines (handlers/retrieval/sources/pg-copy.ts): lines and
 * UTF-8 characters split across chunks at every byte, escapes undone, and
 * batches of at most batchSize. The bytes are what PostgreSQL's COPY sends
 * for row_to_json rows (the Postgres integration tests read a real server).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { copyLineBatches, unescapeCopyText } from '../../../handlers/retrieval/sources/pg-copy.ts';

const ROWS = [
  { id: 1, note: 'plain' },
  { id: 2, note: 'quote " back \\ slash\nnewline\ttab' },
  { id: 3, note: 'ünïcödé 😀 and 𝄞' },
];

/** What COPY text format makes of a row_to_json line: backslashes doubled. */
const copyText = (json: string) => `${json.replaceAll('\\', '\\\\')}\n`;

async function* split(bytes: Buffer, at: number[]): AsyncGenerator<Buffer> {
  let start = 0;
  for (const cut of [...at, bytes.length]) {
    yield bytes.subarray(start, cut);
    start = cut;
  }
}

async function collect(chunks: AsyncIterable<Buffer>, batchSize: number): Promise<string[][]> {
  const out: string[][] = [];
  for await (const batch of copyLineBatches(chunks, batchSize, new AbortController().signal)) out.push(batch);
  return out;
}

test('rows split across chunks at any byte, including inside a 4-byte character, come back whole', async () => {
  const bytes = Buffer.from(ROWS.map((r) => copyText(JSON.stringify(r))).join(''));
  for (let cut = 1; cut < bytes.length; cut++) {
    const batches = await collect(split(bytes, [cut]), 2);
    assert.deepEqual(
      batches.map((b) => b.length),
      [2, 1],
    );
    assert.deepEqual(
      batches.flat().map((line) => JSON.parse(line)),
      ROWS,
      `cut at byte ${cut}`,
    );
  }
  const everyByte = await collect(
    split(
      bytes,
      Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
    ),
    10,
  );
  assert.deepEqual(
    everyByte.flat().map((line) => JSON.parse(line)),
    ROWS,
  );
});

test('escapes: a doubled backslash is one, a control-character escape is JSON whitespace', () => {
  assert.equal(unescapeCopyText('{"a":"x\\\\"y"}'), '{"a":"x\\"y"}');
  assert.equal(unescapeCopyText('{"a":"\\\\\\\\n"}'), '{"a":"\\\\n"}');
  assert.deepEqual(JSON.parse(unescapeCopyText('{"doc":{"a":\\n\\t1,\\r\\n"b":2}}')), { doc: { a: 1, b: 2 } });
  assert.doesNotMatch(unescapeCopyText('{"doc":{"a":\\n1}}'), /[\r\n]/);
});

test('a stream that ends inside a row fails; an empty one yields nothing', async () => {
  await assert.rejects(collect(split(Buffer.from('{"id":1}\n{"id"'), []), 10), /ended inside a row/);
  assert.deepEqual(await collect(split(Buffer.alloc(0), []), 10), []);
});
