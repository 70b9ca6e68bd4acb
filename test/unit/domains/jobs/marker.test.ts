import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findMarker, readLogText } from '../../../../domains/jobs/marker.ts';
import { bufferLogSource } from '../../../../domains/jobs/runtimes/types.ts';
import { resultView } from '../../../../domains/jobs/wire.ts';

const M = 'KZ_MESH_RUN_ON_JSON::';
const scan = (text: string, maxLine?: number) => findMarker(bufferLogSource(text), maxLine);

const cases: { desc: string; log: string; expect: unknown }[] = [
  { desc: 'a single marker', log: `hello\n${M}{"a":1}\n`, expect: { a: 1 } },
  { desc: 'no trailing newline', log: `${M}{"a":2}`, expect: { a: 2 } },
  {
    desc: 'the last of several markers wins',
    log: `${M}{"n":1}\nx\n${M}{"n":2}\ny\n${M}{"n":3}\nz\n`,
    expect: { n: 3 },
  },
  {
    desc: 'invalid JSON after the last marker falls back to the one before',
    log: `${M}{"ok":true}\n${M}{not json\n`,
    expect: { ok: true },
  },
  {
    desc: 'plain text after the marker does not hide it',
    log: `${M}{"ok":1}\nTraceback (most recent call last):\nboom\n`,
    expect: { ok: 1 },
  },
  { desc: 'CRLF line endings', log: `a\r\n${M}{"crlf":true}\r\nb\r\n`, expect: { crlf: true } },
  { desc: 'a scalar marker', log: `${M}42\n`, expect: 42 },
  { desc: 'a list marker', log: `${M}[1,2]\n`, expect: [1, 2] },
  { desc: 'a JSON null marker', log: `${M}null\n`, expect: null },
];

for (const c of cases) {
  test(`marker: ${c.desc}`, async () => {
    const hit = await scan(c.log);
    assert.equal(hit.found, true);
    assert.deepEqual(hit.found && hit.value, c.expect);
  });
}

test('marker: absent, indented, or mid-line markers do not count', async () => {
  for (const log of ['', 'just text\n', `  ${M}{"a":1}\n`, `prefix ${M}{"a":1}\n`, `${M}\n`, `${M}{broken\n`]) {
    assert.deepEqual(await scan(log), { found: false }, JSON.stringify(log));
  }
});

test('marker: huge logs, lines straddling chunk boundaries', async () => {
  const filler = `${'x'.repeat(1000)}\n`.repeat(20_000); // ~20 MB
  const hit = await scan(`${M}{"early":true}\n${filler}${M}{"late":${JSON.stringify('y'.repeat(200_000))}}\n${filler}`);
  assert.equal(hit.found && (hit.value as { late: string }).late.length, 200_000);
  for (let pad = 0; pad < 70; pad += 7) {
    const hit2 = await scan(`${'z'.repeat(65536 - pad)}\n${M}{"pad":${pad}}\n`);
    assert.deepEqual(hit2.found && hit2.value, { pad });
  }
});

test('marker: a line longer than the cap is skipped, the scan goes on', async () => {
  const hit = await scan(`${M}{"small":1}\n${M}{"big":"${'b'.repeat(5000)}"}\n`, 1000);
  assert.deepEqual(hit.found && hit.value, { small: 1 });
});

test('logs text: the whole log, or a notice and the tail', async () => {
  assert.equal(await readLogText(bufferLogSource('abc\n'), 1024), 'abc\n');
  const text = await readLogText(bufferLogSource(`${'a'.repeat(3000)}tail`), 1024);
  assert.match(text, /^\[meshgate: 1980 earlier bytes omitted\]\n/);
  assert.ok(text.endsWith('tail'));
});

test(
  'result view: the marker with job_id and status added when it lacks ' +
    'them, the job facts fixed, the marker as result',
  () => {
    const row = {
      id: 'j1',
      status: 'SUCCEEDED',
      runtimeJobId: 'r1',
      clusterSelector: 'local',
      submittedAt: '2026-01-01T00:00:00.000Z',
      startedAt: '2026-01-01T00:00:01.000Z',
      endedAt: '2026-01-01T00:00:03.500Z',
      errorType: null,
      errorMessage: null,
      timedOut: false,
      auditActor: 'u1',
    } as unknown as Parameters<typeof resultView>[0];
    const pick = (view: Record<string, unknown>, ...keys: string[]) =>
      Object.fromEntries(keys.map((k) => [k, view[k]]));
    const plain = resultView(row, { probe: 'x' });
    assert.deepEqual(pick(plain, 'job_id', 'status', 'probe', 'result', 'audit_actor', 'error', 'duration_seconds'), {
      job_id: 'j1',
      status: 'SUCCEEDED',
      probe: 'x',
      result: { probe: 'x' },
      audit_actor: 'u1',
      error: null,
      duration_seconds: 2.5,
    });
    assert.deepEqual(pick(resultView(row, { job_id: 'mine', status: 'custom' }), 'job_id', 'status'), {
      job_id: 'mine',
      status: 'custom',
    });
    // Fields the SDK types (error: str, audit_actor: str, ...) are the job's own: a marker cannot break or forge them.
    const forging = resultView(row, {
      audit_actor: 'someone-else',
      error: { nested: true },
      duration_seconds: 'long',
      result: 'inner',
    });
    assert.deepEqual(pick(forging, 'audit_actor', 'error', 'duration_seconds'), {
      audit_actor: 'u1',
      error: null,
      duration_seconds: 2.5,
    });
    assert.deepEqual(forging.result, {
      audit_actor: 'someone-else',
      error: { nested: true },
      duration_seconds: 'long',
      result: 'inner',
    });
    assert.deepEqual(pick(resultView(row, [1]), 'job_id', 'status', 'result'), {
      job_id: 'j1',
      status: 'SUCCEEDED',
      result: [1],
    });
    assert.deepEqual(pick(resultView(row, 'text'), 'job_id', 'status', 'result'), {
      job_id: 'j1',
      status: 'SUCCEEDED',
      result: 'text',
    });
  },
);
