/**
 * How a PostgreSQL table read is split into Flight endpoints (pageRanges in
 * domains/retrieval/sources/postgres/read.ts): heap page ranges that cover
 * every page once, the last one open-ended, as many as the settings allow.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pageRanges } from '../../../../../../domains/retrieval/sources/postgres/read.ts';

const limits = (flightEndpointsMax: number, flightEndpointMinPages: number) => ({
  flightEndpointsMax,
  flightEndpointMinPages,
});

test('a table is split into at most the allowed slices of at least the least pages, covering every page once', () => {
  assert.deepEqual(pageRanges(0, limits(4, 1)), []);
  assert.deepEqual(pageRanges(1, limits(4, 1)), []);
  assert.deepEqual(pageRanges(2047, limits(4, 1024)), [], 'one slice is no split');
  assert.deepEqual(pageRanges(2048, limits(4, 1024)), [
    { from: 0, to: 1024 },
    { from: 1024, to: null },
  ]);
  assert.deepEqual(pageRanges(10, limits(3, 1)), [
    { from: 0, to: 3 },
    { from: 3, to: 6 },
    { from: 6, to: null },
  ]);
  for (const [pages, most, least] of [
    [1_000_003, 4, 1024],
    [99, 64, 1],
    [5000, 7, 10],
  ] as const) {
    const ranges = pageRanges(pages, limits(most, least));
    assert.ok(ranges.length <= most && ranges.length >= 2);
    assert.equal(ranges[0]?.from, 0);
    assert.equal(ranges.at(-1)?.to, null);
    for (let i = 1; i < ranges.length; i++) assert.equal(ranges[i]?.from, ranges[i - 1]?.to);
  }
});
