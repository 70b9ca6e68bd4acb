/**
 * The API document against the live gateway: every served route is in it and every documented
 * operation is a route (probed over HTTP); the reference page is self-contained under a strict CSP;
 * and Schemathesis (scripts/peers/schemathesis.sh) fuzzes the documented operations as the
 * administrator: no 5xx, and every status, media type and body as the document states.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { templatePath } from '../../../../gateway/openapi/document.ts';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { peerScript } from '../../../helpers/peers/process.ts';

type Operation = { description?: string; responses: Record<string, unknown> };
type Document = { openapi: string; servers: { url: string }[]; paths: Record<string, Record<string, Operation>> };

const UUID = '00000000-0000-4000-8000-000000000000';

/**
 * Not fuzzed: operations that reach out to addresses taken from the request or a stored record (federation
 * pairing, preflight and diagnose, peer-protocol calls, retrieval from a fuzzed dataset's source, the smoke
 * run's model check through a fuzzed deployment's upstream), which must never leave loopback; and those that
 * end the fuzzer's own session or move the API away from it (the routing dry run changes nothing and is fuzzed).
 */
const NOT_FUZZED =
  '^/(cluster/federations|cluster/remote/|retrieval/jobs$|auth/logout|auth/token|auth/refresh|' +
  'config/routing$|cluster/jobs/(submit|run)|serving/smoke)';

test('every served route is documented, and every documented operation is a route', async (t) => {
  const gw = await startTestGateway(t);
  const res = await gw.request('GET', '/api/openapi.json');
  assert.equal(res.status, 200);
  const doc = res.json as Document;
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.servers[0]?.url, '/api');
  for (const route of gw.gateway.apiRoutes) {
    const methods = typeof route.method === 'string' ? [route.method] : route.method;
    for (const method of methods) {
      // A trailing-slash twin is documented once, at the bare path, whose description names the twin.
      const twinOf = doc.paths[templatePath(route.path.replace(/(.)\/$/, '$1'))]?.[method.toLowerCase()];
      const op = doc.paths[templatePath(route.path)]?.[method.toLowerCase()] ?? twinOf;
      assert.ok(op, `${method} ${route.path} is not documented`);
      if (op === twinOf && route.path.endsWith('/')) assert.ok(op.description?.includes(`\`${route.path}\``));
    }
  }
  // Each documented operation, called anonymously with sample parameters, reaches a route: whatever it
  // answers (401, 422, 404 of a missing record), the router did not refuse the path or the method.
  for (const [path, item] of Object.entries(doc.paths)) {
    const concrete = path.replace(/\{[^}]+\}/g, UUID);
    for (const method of Object.keys(item)) {
      const answer = await gw.request(method.toUpperCase(), `/api${concrete}`);
      const reason = answer.json?.detail?.reason;
      assert.ok(answer.status !== 405 && answer.status !== 307, `${method} ${path}: ${answer.status}`);
      assert.ok(reason !== 'route_not_found' && reason !== 'method_not_allowed', `${method} ${path}: ${reason}`);
      assert.ok(
        item[method]?.responses[String(answer.status)],
        `${method} ${path} answered an undocumented ${answer.status}`,
      );
    }
  }
});

test('the reference page is self-contained and runs only its own script', async (t) => {
  const gw = await startTestGateway(t);
  const page = await gw.request('GET', '/api/docs');
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  const csp = String(page.headers['content-security-policy']);
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  // Nothing is loaded from anywhere: no src or href attribute at all, and the document is fetched relative to the page.
  assert.doesNotMatch(page.text, /\s(src|href)=/);
  assert.match(page.text, /fetch\('openapi\.json'\)/);
  // Document values are written as text: the script never parses markup.
  assert.doesNotMatch(page.text, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
});

test('Schemathesis finds no server error and no answer the document does not describe', async (t) => {
  const st = await peerScript('schemathesis');
  const gw = await startTestGateway(t);
  const work = mkdtempSync(join(tmpdir(), 'meshgate-st-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const ca = join(work, 'ca.pem');
  writeFileSync(ca, gw.gateway.caPem);
  const token = await gw.adminToken();
  const args = [
    'run',
    `${gw.gateway.httpsUrl}/api/openapi.json`,
    '--tls-verify',
    ca,
    '--header',
    `Authorization: Bearer ${token}`,
    '--checks',
    'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
    '--phases',
    'examples,coverage,fuzzing',
    '--exclude-path-regex',
    NOT_FUZZED,
    '--max-examples',
    '8',
    '--max-time',
    '40',
    '--request-timeout',
    '10',
    // One worker: Python 3.11's ast module can raise a spurious SystemError ("AST constructor recursion depth
    // mismatch", CPython gh-106905) when Hypothesis describes filters from several threads at once.
    '--workers',
    '1',
    '--seed',
    '20',
    '--no-color',
  ];
  const run = await promisify(execFile)(st, args, { cwd: work, maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code?: number; stdout?: string }) => ({ code: error.code ?? -1, stdout: error.stdout ?? '' }),
  );
  assert.equal(run.code, 0, run.stdout.slice(-20_000));
  assert.match(run.stdout, /Tested: \d{2,}/);
  // The gateway logged no unhandled error while being fuzzed.
  assert.equal(gw.logs.filter((line) => line.includes('unhandled error')).length, 0);
});
