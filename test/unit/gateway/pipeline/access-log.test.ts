import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { RequestContext } from '../../../../gateway/http/context.ts';
import { NO_SPAN } from '../../../../gateway/observability/tracing.ts';
import { createAccessLogStage } from '../../../../gateway/pipeline/stages/access-log.ts';

/** Just the fields the stage reads: a response that emits `close`, and the context facts. */
function fakeContext(fields: Partial<RequestContext>, finished: boolean) {
  const res = Object.assign(new EventEmitter(), { statusCode: 404, writableFinished: finished });
  return {
    requestId: 'r-12345678',
    method: 'GET',
    rawPath: '/a',
    startedAt: performance.now(),
    service: null,
    principal: null,
    span: NO_SPAN,
    ...fields,
    res,
  } as unknown as RequestContext & { res: EventEmitter };
}

function logged(
  ctx: RequestContext & { res: EventEmitter },
  bindings?: Record<string, string | number>,
  enabled = true,
): string[] {
  const lines: string[] = [];
  createAccessLogStage({ enabled, write: (line) => lines.push(line) }, bindings).run(ctx);
  ctx.res.emit('close');
  return lines;
}

test('an access line is one JSON line in pino format with the fixed fields', () => {
  const ctx = fakeContext(
    {
      rawPath: '/runtime/apps/x/"quoted"\\path',
      service: 'apps',
      principal: { userId: 'u-1', source: 'native' } as unknown as RequestContext['principal'],
    },
    true,
  );
  const [line] = logged(ctx, { legacy_port: 8081 });
  assert.ok(line?.endsWith('}\n') && !line.slice(0, -1).includes('\n'));
  const parsed = JSON.parse(line as string);
  assert.deepEqual(Object.keys(parsed), [
    'level',
    'time',
    'svc',
    'legacy_port',
    'req_id',
    'method',
    'path',
    'status',
    'service',
    'user',
    'source',
    'ms',
    'aborted',
    'msg',
  ]);
  assert.equal(parsed.level, 30);
  assert.equal(parsed.svc, 'meshgate');
  assert.equal(parsed.path, '/runtime/apps/x/"quoted"\\path');
  assert.equal(parsed.status, 404);
  assert.equal(parsed.user, 'u-1');
  assert.equal(parsed.aborted, false);
  assert.equal(parsed.msg, 'request');
  assert.ok(parsed.ms >= 0 && Math.abs(parsed.time - Date.now()) < 5000);
});

test('anonymous and aborted requests leave out the principal and say aborted', () => {
  const parsed = JSON.parse(logged(fakeContext({}, false))[0] as string);
  assert.equal('user' in parsed || 'source' in parsed || 'service' in parsed, false);
  assert.equal(parsed.aborted, true);
});

test('no line is written when the log level is above info', () => {
  assert.deepEqual(logged(fakeContext({}, true), {}, false), []);
});
