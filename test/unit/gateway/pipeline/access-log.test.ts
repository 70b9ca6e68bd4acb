import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { pino } from 'pino';
import { configSchema } from '../../../../gateway/config/schema.ts';
import { TrustedProxies } from '../../../../gateway/http/client-address.ts';
import type { RequestContext } from '../../../../gateway/http/context.ts';
import { createMetrics } from '../../../../gateway/observability/metrics.ts';
import { createRequestObserver, type RequestObserver } from '../../../../gateway/observability/request.ts';
import { createTracing, NO_SPAN } from '../../../../gateway/observability/tracing.ts';
import { createAccessLogStage } from '../../../../gateway/pipeline/stages/access-log.ts';

interface Wire {
  headers?: Record<string, string>;
  peer?: string;
  responseHeaders?: Record<string, string | number>;
  /** Whether the answer's head went out; by default, whether the answer finished. */
  headersSent?: boolean;
}

/** Just the fields the stage reads: a request with headers and a peer, a response that emits `close`, the facts. */
function fakeContext(fields: Partial<RequestContext>, finished: boolean, wire: Wire = {}) {
  const responseHeaders = wire.responseHeaders ?? {};
  const res = Object.assign(new EventEmitter(), {
    statusCode: 404,
    writableFinished: finished,
    headersSent: wire.headersSent ?? finished,
    getHeader: (name: string) => responseHeaders[name],
  });
  const req = { headers: wire.headers ?? {}, socket: { remoteAddress: wire.peer ?? '127.0.0.1' } };
  return {
    requestId: 'r-12345678',
    method: 'GET',
    rawPath: '/a',
    startedAt: performance.now(),
    service: null,
    route: null,
    principal: null,
    span: NO_SPAN,
    deployment: null,
    upstreamMs: -1,
    requestBytes: -1,
    responseBytes: -1,
    failure: null,
    ...fields,
    req,
    res,
  } as unknown as RequestContext & { res: EventEmitter };
}

function logged(
  ctx: RequestContext & { res: EventEmitter },
  bindings?: Record<string, string | number>,
  enabled = true,
  options: { observer?: RequestObserver; proxies?: TrustedProxies } = {},
): string[] {
  const lines: string[] = [];
  const sink = { enabled, write: (line: string) => lines.push(line) };
  createAccessLogStage(sink, bindings, options.observer ?? null, options.proxies).run(ctx);
  ctx.res.emit('close');
  return lines;
}

const one = (lines: string[]) => {
  assert.equal(lines.length, 1);
  const line = lines[0] as string;
  assert.ok(line.endsWith('}\n') && !line.slice(0, -1).includes('\n'), 'one line');
  return JSON.parse(line) as Record<string, unknown>;
};

test('an access line is one JSON line in pino format with the fixed fields', () => {
  const ctx = fakeContext(
    {
      rawPath: '/runtime/apps/x/"quoted"\\path',
      service: 'apps',
      principal: { userId: 'u-1', source: 'native' } as unknown as RequestContext['principal'],
      deployment: 'd-1',
      upstreamMs: 12.5,
      requestBytes: 300,
      responseBytes: 4096,
      failure: 'upstream_timeout',
    },
    true,
    { headers: { 'user-agent': 'curl/8.5' }, peer: '127.0.0.9' },
  );
  const parsed = one(logged(ctx, { legacy_port: 8081 }));
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
    'deployment',
    'user',
    'source',
    'client',
    'ua',
    'req_bytes',
    'res_bytes',
    'upstream_ms',
    'failure',
    'ms',
    'aborted',
    'msg',
  ]);
  assert.equal(parsed.level, 30);
  assert.equal(parsed.svc, 'meshgate');
  assert.equal(parsed.path, '/runtime/apps/x/"quoted"\\path');
  assert.equal(parsed.status, 404);
  assert.equal(parsed.user, 'u-1');
  assert.deepEqual(
    [parsed.deployment, parsed.client, parsed.ua, parsed.req_bytes, parsed.res_bytes, parsed.upstream_ms],
    ['d-1', '127.0.0.9', 'curl/8.5', 300, 4096, 12.5],
  );
  assert.equal(parsed.failure, 'upstream_timeout');
  assert.equal(parsed.aborted, false);
  assert.equal(parsed.msg, 'request');
  assert.ok((parsed.ms as number) >= 0 && Math.abs((parsed.time as number) - Date.now()) < 5000);
});

test('without counted bytes the lengths are the declared ones; a length that is not one is left out', () => {
  const declared = one(
    logged(fakeContext({}, true, { headers: { 'content-length': '17' }, responseHeaders: { 'content-length': 42 } })),
  );
  assert.deepEqual([declared.req_bytes, declared.res_bytes], [17, 42]);
  const bogus = one(
    logged(fakeContext({}, true, { headers: { 'content-length': '1,"admin":true' }, responseHeaders: {} })),
  );
  assert.equal('req_bytes' in bogus || 'res_bytes' in bogus || 'upstream_ms' in bogus, false);
  assert.equal('admin' in bogus, false);
});

test('each line of a listener names its own request, when fields repeat and when they change', () => {
  const sink = { enabled: true, lines: [] as string[], write: (line: string) => sink.lines.push(line) };
  const stage = createAccessLogStage(sink, {}, null);
  const user = (userId: string, source: string) => ({ userId, source }) as unknown as RequestContext['principal'];
  const requests: Record<string, unknown>[] = [
    { method: 'GET', service: 'apps', deployment: 'd-1', principal: user('u-1', 'native') },
    { method: 'GET', service: 'apps', deployment: 'd-1', principal: user('u-1', 'native') },
    { method: 'POST', service: 'models', deployment: 'd-"2"', principal: user('u-\\2', 'mesh') },
    { method: 'GET', service: 'apps', deployment: null, principal: null },
    { method: 'GET', service: 'apps', deployment: 'd-1', principal: user('u-1', 'native') },
  ];
  for (const fields of requests) {
    const ctx = fakeContext(fields as Partial<RequestContext>, true);
    stage.run(ctx);
    ctx.res.emit('close');
  }
  const seen = sink.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    seen.map((line) => [line.method, line.service, line.deployment, line.user, line.source]),
    [
      ['GET', 'apps', 'd-1', 'u-1', 'native'],
      ['GET', 'apps', 'd-1', 'u-1', 'native'],
      ['POST', 'models', 'd-"2"', 'u-\\2', 'mesh'],
      ['GET', 'apps', undefined, undefined, undefined],
      ['GET', 'apps', 'd-1', 'u-1', 'native'],
    ],
  );
});

test('a hostile user agent stays one JSON string value: no line break, no injected field', () => {
  const hostile = 'x","admin":true,"status":200}\n{"level":60,"msg":"forged\u2028\ud800\u0000\\';
  const parsed = one(logged(fakeContext({}, true, { headers: { 'user-agent': hostile } })));
  assert.equal(parsed.ua, hostile);
  assert.equal(parsed.status, 404);
  assert.equal('admin' in parsed, false);
  const long = one(logged(fakeContext({}, true, { headers: { 'user-agent': 'a'.repeat(10_000) } })));
  assert.equal(long.ua, 'a'.repeat(256), 'a user agent is cut to a bounded length');
});

test('the client is the socket peer; X-Forwarded-For is read only from a trusted proxy', () => {
  const proxies = new TrustedProxies(['127.0.0.2', '127.0.1.0/24']);
  const forwarded = 'forged-by-client, 192.0.2.7, 127.0.1.5';
  const via = (peer: string) =>
    one(logged(fakeContext({}, true, { peer, headers: { 'x-forwarded-for': forwarded } }), {}, true, { proxies }));
  assert.equal(via('127.0.0.2').client, '192.0.2.7', 'behind trusted proxies: the rightmost untrusted hop');
  assert.equal(via('::ffff:127.0.0.2').client, '192.0.2.7', 'an IPv4-mapped peer is the same proxy');
  assert.equal(via('127.0.0.3').client, '127.0.0.3', 'an untrusted peer is the client, whatever it says');
  const noProxies = one(
    logged(fakeContext({}, true, { peer: '127.0.0.2', headers: { 'x-forwarded-for': '1.2.3.4' } })),
  );
  assert.equal(noProxies.client, '127.0.0.2', 'without trusted proxies the header is never read');
  const garbage = (header: string) =>
    one(
      logged(fakeContext({}, true, { peer: '127.0.0.2', headers: { 'x-forwarded-for': header } }), {}, true, {
        proxies,
      }),
    );
  assert.equal(garbage(`${'x'.repeat(5000)}, 127.0.1.5`).client, '127.0.1.5', 'a hop that is no address ends the walk');
  assert.equal(garbage('evil.example').client, '127.0.0.2', 'a name is never taken for the client');
});

test('a recording span puts its trace id on the line', async (t) => {
  // A loopback receiver that takes every export, so closing the tracing flushes at once.
  const receiver = createServer((req, res) => req.resume().on('end', () => res.end('{}')));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { port } = receiver.address() as AddressInfo;
  const tracing = await createTracing(
    configSchema.parse({ tracing: { otlpEndpoint: `http://127.0.0.1:${port}/v1/traces`, exportDelayMs: 60_000 } }),
    { metrics: createMetrics({ databaseGauges: false }), logger: pino({ level: 'silent' }) },
  );
  t.after(async () => {
    await tracing.close();
    await new Promise((resolve) => receiver.close(resolve));
  });
  const observer = createRequestObserver(createMetrics(), tracing);
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const headers = { traceparent: `00-${traceId}-00f067aa0ba902b7-01` };
  const parsed = one(logged(fakeContext({}, true, { headers }), {}, true, { observer }));
  assert.equal(parsed.trace_id, traceId);
  const unsampled = { traceparent: `00-${traceId}-00f067aa0ba902b7-00` };
  assert.equal('trace_id' in one(logged(fakeContext({}, true, { headers: unsampled }), {}, true, { observer })), false);
});

test('anonymous and aborted requests leave out the principal and say aborted', () => {
  const parsed = JSON.parse(logged(fakeContext({}, false))[0] as string);
  assert.equal('user' in parsed || 'source' in parsed || 'service' in parsed, false);
  assert.equal(parsed.aborted, true);
});

test('closed before any head was sent is 499 (client closed); cut after its head, the status sent stays', () => {
  assert.equal(one(logged(fakeContext({}, false))).status, 499);
  assert.equal(one(logged(fakeContext({}, false, { headersSent: true }))).status, 404);
});

test('no line is written when the log level is above info', () => {
  assert.deepEqual(logged(fakeContext({}, true), {}, false), []);
});
