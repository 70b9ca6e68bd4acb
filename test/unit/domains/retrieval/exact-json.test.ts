/**
 * parseExact (domains/retrieval/exact-json.ts): a number whose double would
 * not give its text back is kept as that text, so JSON.stringify writes the
 * same bytes and the Arrow writers read every digit; others are plain numbers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toBigInt64, toFloat, toUnscaled } from '../../../../domains/retrieval/arrow/values.ts';
import { numberText, parseExact } from '../../../../domains/retrieval/exact-json.ts';

const CASES: [text: string, kept: boolean][] = [
  ['9007199254740993', true],
  ['-9223372036854775808', true],
  ['12345678901234567890.5', true],
  ['12.50', true],
  ['-0.5000000000', true],
  ['1e3', true],
  ['12.5', false],
  ['-42', false],
  ['0.125', false],
  ['9007199254740991', false],
];

test('a number its double would change is kept as its text, written back byte for byte', () => {
  for (const [text, kept] of CASES) {
    const json = `[{"n":${text},"s":"1.50 as text"}]`;
    const [row] = parseExact(json) as [{ n: unknown; s: string }];
    assert.equal(typeof row.n === 'object', kept, text);
    assert.equal(numberText(row.n), kept ? text : Number(text), text);
    assert.equal(JSON.stringify([row]), json, text);
    assert.equal(row.s, '1.50 as text');
  }
});

test('the Arrow writers read a kept number as its text', () => {
  const [big, dec, wide] = parseExact('[9007199254740993, 1234567890123456789012345678.1234567891, 0.10]') as unknown[];
  assert.equal(toBigInt64(big), 9007199254740993n);
  assert.equal(toUnscaled(dec, 38, 10), 12345678901234567890123456781234567891n);
  assert.equal(toFloat(wide), 0.1);
});
