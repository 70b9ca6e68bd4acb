import assert from 'node:assert/strict';
import { test } from 'node:test';
import { endpointForLog, exportFailure } from '../../../../gateway/observability/tracing-export.ts';

test('the failures the OTLP transport reports are classified into a bounded set', () => {
  const system = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:4318`), { code });
  const answered = (status?: number) =>
    Object.assign(new Error('Bad Request'), { name: 'OTLPExporterError', code: status, data: 'collector body' });
  const table: [unknown, ReturnType<typeof exportFailure>][] = [
    [system('ECONNREFUSED'), { reason: 'unreachable', error: 'Error', code: 'ECONNREFUSED' }],
    [system('ENOTFOUND'), { reason: 'unreachable', error: 'Error', code: 'ENOTFOUND' }],
    [system('ETIMEDOUT'), { reason: 'timeout', error: 'Error', code: 'ETIMEDOUT' }],
    [new Error('Request timed out'), { reason: 'timeout', error: 'Error' }],
    [answered(400), { reason: 'rejected', error: 'OTLPExporterError', status: 400 }],
    [answered(), { reason: 'rejected', error: 'OTLPExporterError' }],
    [new TypeError('s is not a constructor'), { reason: 'other', error: 'TypeError' }],
    [undefined, { reason: 'other', error: 'undefined' }],
    ['a string', { reason: 'other', error: 'string' }],
  ];
  for (const [error, expected] of table) assert.deepEqual(exportFailure(error), expected);
});

test('the endpoint a log line shows has no credential in it', () => {
  assert.equal(
    endpointForLog('https://user:secret@collector.example:4318/v1/traces?api_key=secret#x'),
    'https://collector.example:4318/v1/traces',
  );
  assert.equal(endpointForLog('http://127.0.0.1:4318/v1/traces'), 'http://127.0.0.1:4318/v1/traces');
});
