/**
 * The contract every retrieval Source keeps: one shared suite, run by
 * every implementation. A source under test is built holding CONTRACT_ROWS
 * (text columns id, grp, val, in this order); every source (filesystem, PostgreSQL,
 * S3, Kafka, Hive, Slack) runs the same suite.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ReadRequest, Row, Source } from '../../domains/retrieval/sources/types.ts';

export const CONTRACT_ROWS: Record<string, string>[] = Array.from({ length: 57 }, (_, i) => ({
  id: `k${String(i).padStart(3, '0')}`,
  grp: ['a', 'b', 'c', 'd'][i % 4] as string,
  val: String(i % 7),
}));

export interface After {
  after(fn: () => unknown): void;
}

export type MakeSource = (t: After, rows: readonly Record<string, string>[]) => Promise<Source>;

async function readAll(
  source: Source,
  request: Partial<ReadRequest> = {},
): Promise<{ rows: Row[]; batches: number[] }> {
  const full: ReadRequest = {
    columns: null,
    filters: {},
    offset: 0,
    limit: null,
    batchSize: 10,
    signal: new AbortController().signal,
    ...request,
  };
  const rows: Row[] = [];
  const batches: number[] = [];
  for await (const batch of source.read(full)) {
    batches.push(batch.length);
    rows.push(...batch);
  }
  return { rows, batches };
}

const pick = (rows: readonly Record<string, string>[], columns: string[]) =>
  rows.map((r) => Object.fromEntries(columns.map((c) => [c, r[c]])));

async function readAllJson(source: Source, request: Partial<ReadRequest>): Promise<{ rows: Row[]; batches: number[] }> {
  assert.ok(source.readJson, 'the source offers readJson');
  const full: ReadRequest = {
    columns: null,
    filters: {},
    offset: 0,
    limit: null,
    batchSize: 10,
    signal: new AbortController().signal,
    ...request,
  };
  const rows: Row[] = [];
  const batches: number[] = [];
  for await (const { json, ends } of source.readJson(full)) {
    batches.push(ends.length);
    const array = JSON.parse(json.toString()) as Row[];
    // Each row's offsets cut out exactly its text (the pipeline splits a batch by them).
    const cut = ends.map(
      (end, i) => JSON.parse(json.toString('utf8', i === 0 ? 1 : (ends[i - 1] as number) + 1, end)) as Row,
    );
    assert.deepEqual(cut, array);
    rows.push(...array);
  }
  return { rows, batches };
}

/** `readJson`: the source also offers rows as encoded JSON arrays (Source.readJson), checked against read(). */
export function runSourceContract(name: string, make: MakeSource, options: { readJson?: boolean } = {}): void {
  if (options.readJson) {
    test(`${name}: readJson gives read()'s rows, in order, in batches of at most batchSize`, async (t) => {
      const source = await make(t, CONTRACT_ROWS);
      const requests: Partial<ReadRequest>[] = [
        {},
        { columns: ['val', 'id'], batchSize: 7 },
        { filters: { grp: ['a', 'c'] }, offset: 3, limit: 9, batchSize: 4 },
      ];
      for (const request of requests) {
        const json = await readAllJson(source, request);
        assert.deepEqual(json.rows, (await readAll(source, request)).rows, JSON.stringify(request));
        assert.ok(json.batches.every((n) => n > 0 && n <= (request.batchSize ?? 10)));
      }
      assert.deepEqual((await readAllJson(source, {})).rows, CONTRACT_ROWS);
    });
  }

  test(`${name}: schema lists the columns in order`, async (t) => {
    const source = await make(t, CONTRACT_ROWS);
    const schema = await source.schema(new AbortController().signal);
    assert.deepEqual(
      schema.map((f) => f.name),
      ['id', 'grp', 'val'],
    );
    for (const field of schema) assert.equal(typeof field.type, 'string');
  });

  test(`${name}: a full read returns every row in order, in batches of at most batchSize`, async (t) => {
    const { rows, batches } = await readAll(await make(t, CONTRACT_ROWS));
    assert.deepEqual(rows, CONTRACT_ROWS);
    assert.ok(batches.every((n) => n > 0 && n <= 10));
  });

  test(`${name}: columns, filters (equality, list = IN), offset and limit`, async (t) => {
    const source = await make(t, CONTRACT_ROWS);
    assert.deepEqual((await readAll(source, { columns: ['val', 'id'] })).rows, pick(CONTRACT_ROWS, ['val', 'id']));
    const inB = CONTRACT_ROWS.filter((r) => r.grp === 'b');
    assert.deepEqual((await readAll(source, { filters: { grp: 'b' } })).rows, inB);
    const inSet = CONTRACT_ROWS.filter((r) => ['a', 'c'].includes(r.grp as string) && r.val === '3');
    assert.deepEqual((await readAll(source, { filters: { grp: ['a', 'c'], val: '3' } })).rows, inSet);
    assert.deepEqual((await readAll(source, { offset: 50 })).rows, CONTRACT_ROWS.slice(50));
    assert.deepEqual((await readAll(source, { offset: 5, limit: 12, batchSize: 5 })).rows, CONTRACT_ROWS.slice(5, 17));
    assert.deepEqual(
      (await readAll(source, { filters: { grp: 'd' }, offset: 2, limit: 3, columns: ['id'] })).rows,
      pick(
        CONTRACT_ROWS.filter((r) => r.grp === 'd'),
        ['id'],
      ).slice(2, 5),
    );
    assert.deepEqual((await readAll(source, { filters: { grp: 'zzz' } })).rows, []);
  });

  test(`${name}: an aborted signal stops the read; leaving early is clean`, async (t) => {
    const source = await make(t, CONTRACT_ROWS);
    const controller = new AbortController();
    const seen: number[] = [];
    await assert.rejects(async () => {
      for await (const batch of source.read({
        columns: null,
        filters: {},
        offset: 0,
        limit: null,
        batchSize: 5,
        signal: controller.signal,
      })) {
        seen.push(batch.length);
        controller.abort();
      }
    });
    assert.equal(seen.length, 1);
    for await (const _batch of source.read({
      columns: null,
      filters: {},
      offset: 0,
      limit: null,
      batchSize: 5,
      signal: new AbortController().signal,
    }))
      break;
    assert.deepEqual(
      (await readAll(source)).rows.length,
      CONTRACT_ROWS.length,
      'the source is still readable afterwards',
    );
  });
}
