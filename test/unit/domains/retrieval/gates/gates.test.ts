/** Gate runner postconditions and the clearance gate's decisions, table-driven. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clearanceGate } from '../../../../../domains/retrieval/gates/clearance.ts';
import { GateRunner, runnerFor } from '../../../../../domains/retrieval/gates/runner.ts';
import type { RecordGate } from '../../../../../domains/retrieval/gates/types.ts';
import type { Row } from '../../../../../domains/retrieval/sources/types.ts';

const rows: Row[] = [{ c: 'U' }, { c: 'S' }, { c: 'TS' }];

const broken: { desc: string; gate: RecordGate['filterRecords'] }[] = [
  {
    desc: 'included_count differs from len(records)',
    gate: (r) => ({ records: r.slice(0, 1), audit: [], included_count: 2, redacted_count: 1, total_count: 3 }),
  },
  {
    desc: 'counts do not add up',
    gate: (r) => ({ records: r.slice(0, 1), audit: [], included_count: 1, redacted_count: 1, total_count: 3 }),
  },
  {
    desc: 'total differs from the input',
    gate: (r) => ({ records: r.slice(0, 1), audit: [], included_count: 1, redacted_count: 1, total_count: 2 }),
  },
  {
    desc: 'non-integer counts',
    gate: (r) => ({ records: r.slice(0, 1), audit: [], included_count: 1, redacted_count: 1.5, total_count: 3 }),
  },
  {
    desc: 'a fabricated record',
    gate: () => ({
      records: [{ c: 'TS', leak: true }],
      audit: [],
      included_count: 1,
      redacted_count: 2,
      total_count: 3,
    }),
  },
  {
    desc: 'the gate throws',
    gate: () => {
      throw new Error('boom');
    },
  },
];

for (const { desc, gate } of broken) {
  test(`a gate whose result breaks a postcondition fails the batch closed: ${desc}`, () => {
    const runner = new GateRunner({ name: 'broken', requiredFields: ['c'], filterRecords: gate }, { clearance: 'TS' });
    const outcome = runner.run(rows);
    assert.deepEqual(outcome.released, []);
    assert.equal(outcome.withheld, 3);
    assert.ok(outcome.violation);
  });
}

test('the clearance gate ranks U < S < TS, floors unknown callers to U, withholds unknown classifications', () => {
  const gate = clearanceGate.create({ classification_field: 'c' });
  const input: Row[] = [{ c: 'U' }, { c: ' s' }, { c: 'ts' }, { c: 'X' }, {}];
  const table: [Record<string, unknown>, number[], string[]][] = [
    [
      { clearance: 'U' },
      [0],
      [
        'clearance_sufficient',
        'clearance_insufficient',
        'clearance_insufficient',
        'classification_unrecognized',
        'classification_unrecognized',
      ],
    ],
    [{ clearance: 'S' }, [0, 1], []],
    [{ clearance: 'TS' }, [0, 1, 2], []],
    [{}, [0], []],
    [{ clearance: 7 }, [0], []],
  ];
  for (const [attrs, kept, reasons] of table) {
    const result = gate.filterRecords(input, attrs);
    assert.deepEqual(
      result.records,
      kept.map((i) => input[i]),
    );
    assert.equal(result.total_count, 5);
    assert.equal(result.included_count + result.redacted_count, 5);
    if (reasons.length > 0)
      assert.deepEqual(
        result.audit.map((a) => a.reason),
        reasons,
      );
  }
  assert.deepEqual(clearanceGate.parseConfig(undefined), { config: { classification_field: 'classification' } });
  assert.ok('problems' in clearanceGate.parseConfig({ classification_field: '' }));
});

test('a binding naming no built-in gate releases nothing', () => {
  const outcome = runnerFor({ type: 'gone.Gate', config: {} }, { clearance: 'TS' }).run(rows);
  assert.deepEqual(outcome.released, []);
  assert.equal(outcome.withheld, 3);
});
