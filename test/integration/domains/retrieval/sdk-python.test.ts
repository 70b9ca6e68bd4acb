/**
 * The platform's public Python SDK against meshgate (the wire shapes of
 * docs/wire.md are what it depends on; scripts/peers/sdk.sh installs kamiwaza-sdk from
 * PyPI): retrieval inline, over SSE and the gRPC handshake through
 * the SDK's own models, the clearance fixture per caller
 * with its setup — attribute, gate discovery and binding, subjects, grants —
 * made by the SDK too,
 * and the OpenAI-compatible runtime URL found
 * the way the SDK finds it — the serving listing, then the official openai
 * client on `<origin>/runtime/models/<id>/v1`, plain and streamed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { startPeer } from '../../../helpers/federation.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { MARKER } from '../../../helpers/jobs.ts';
import { allow, pairForMesh } from '../../../helpers/mesh.ts';
import { peerScript } from '../../../helpers/peers/process.ts';
import { createDataset, grantViewer } from '../../../helpers/retrieval.ts';
import { CLEARANCE_ROWS, writeAllFormats } from '../../../helpers/retrieval-fixtures.ts';
import { deploy, startModelServer } from '../../../helpers/upstreams.ts';

const execFileAsync = promisify(execFile);

async function sdk(gw: TestGateway, dir: string, scenario: string, args: Record<string, unknown>): Promise<any> {
  const python = await peerScript('sdk');
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, gw.gateway.caPem);
  const all = { base_url: `${gw.url}/api`, ca_file: caFile, token: await gw.adminToken(), ...args };
  // The SDK honours these; none may steer it away from the CA given here.
  const env = { ...process.env, REQUESTS_CA_BUNDLE: '', CURL_CA_BUNDLE: '', KAMIWAZA_VERIFY_SSL: '' };
  const { stdout } = await execFileAsync(
    python,
    [join(import.meta.dirname, '../../../helpers/sdk_scenarios.py'), scenario, JSON.stringify(all)],
    { env },
  );
  const result = JSON.parse(stdout.trim().split('\n').at(-1) as string);
  assert.equal(result.error, undefined, JSON.stringify(result.error));
  return result;
}

function scratch(t: { after(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-sdk-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the Python SDK catalogs a dataset and retrieves it inline, over SSE, and gets a gRPC handshake', async (t) => {
  const dir = scratch(t);
  const path = join(dir, 'sample.csv');
  writeFileSync(path, 'id,region,amount\nr1,north,5\nr2,south,7\nr3,east,9\n');
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [dir] } });
  const rows = [
    { id: 'r1', region: 'north', amount: '5' },
    { id: 'r2', region: 'south', amount: '7' },
    { id: 'r3', region: 'east', amount: '9' },
  ];
  const got = await sdk(gw, dir, 'retrieval', { name: 'sample', path });
  assert.equal(got.urn, 'urn:li:dataset:(urn:li:dataPlatform:file,sample,PROD)');
  assert.deepEqual(got.listed, [got.urn]);
  assert.deepEqual(got.inline, { transport: 'inline', rows, row_count: 3 });
  assert.equal(got.sse.transport, 'sse');
  const chunks = got.sse.events.filter((e: { event: string }) => e.event === 'chunk');
  assert.deepEqual(
    chunks.map((e: { data: { sequence: number } }) => e.data.sequence),
    [1, 2],
  );
  assert.deepEqual(
    chunks.flatMap((e: { data: { data: unknown[] } }) => e.data.data),
    rows,
  );
  assert.equal(got.sse.events.at(-1).event, 'complete');
  assert.deepEqual(got.status, { status: 'COMPLETED', rows: 3, chunks: 2 });
  assert.equal(got.grpc.transport, 'grpc');
  assert.deepEqual(got.grpc.locations, [`grpc+tls://${new URL(gw.url).host}`]);
  assert.equal(got.grpc.has_token, true);
});

test(
  "the Python SDK reads the clearance fixture with each caller's token: " +
    '3, 4, 5 rows, gate_audit as the contract says',
  async (t) => {
    const { gw, dir, urn, tokens } = await clearanceReaders(t, 'csv', 'sdk');
    const got = await sdk(gw, dir, 'gated', { urn, tokens });
    const footer = (filtered: boolean) => ({ filtered, included: null, redacted: null, total: null, gate: null });
    for (const [clearance, count, filtered] of [
      ['U', 3, true],
      ['S', 4, true],
      ['TS', 5, false],
    ] as const) {
      const ids = CLEARANCE_ROWS.slice(0, count).map((r) => r.id);
      assert.deepEqual(got[clearance].inline_rows, ids, clearance);
      assert.deepEqual(got[clearance].inline_gate_audit, footer(filtered), clearance);
      assert.deepEqual(got[clearance].sse_rows, ids, clearance);
      assert.ok(
        got[clearance].sse_filtered.every((f: boolean) => f === filtered),
        clearance,
      );
    }
  },
);

test(
  'the Python SDK performs the clearance setup itself — declare, ' +
    'discover, catalog, bind, subjects and grants — and each persona reads ' +
    '3, 4, 5 rows',
  async (t) => {
    const dir = scratch(t);
    const path = writeAllFormats(dir, 'clearance', CLEARANCE_ROWS).csv;
    const gw = await startTestGateway(t, { retrieval: { fsRoots: [dir] } });
    const personas = { 'fed-clr-u': 'U', 'fed-clr-s': 'S', 'fed-clr-ts': 'TS' };
    const got = await sdk(gw, dir, 'gate_setup', { path, personas, password: 'persona-password' });
    assert.deepEqual(got.declared, { name: 'clearance', type: 'string', state: 'declared', sensitive: false });
    assert.deepEqual(got.discovered, { name: 'clearance_gate', kind: 'attribute', required: ['clearance'] });
    assert.deepEqual(got.gate, { gate_name: 'clearance_gate', kind: 'attribute' });
    assert.deepEqual(got.listed, [
      ['badge', 'withdrawn'],
      ['clearance', 'declared'],
    ]);
    assert.deepEqual(got.declared_only, ['clearance']);
    assert.deepEqual(got.deprecated, { state: 'deprecated', deprecated_at: true });
    assert.deepEqual(got.withdrawn, { name: 'badge', state: 'withdrawn', subjects_holding_value: 0, forced: false });
    const tokens: Record<string, string> = {};
    for (const [username, clearance] of Object.entries(personas))
      tokens[clearance] = await gw.login(username, 'persona-password');
    const read = await sdk(gw, dir, 'gated', { urn: got.urn, tokens });
    assert.deepEqual(
      ['U', 'S', 'TS'].map((c) => read[c].sse_rows.length),
      [3, 4, 5],
    );
  },
);

test(
  'the Python SDK finds a model deployment by name, chats through its ' +
    'runtime URL with the openai client, and stops it',
  async (t) => {
    const dir = scratch(t);
    const gw = await startTestGateway(t);
    const model = await startModelServer(t);
    const d = await deploy(gw, { kind: 'model', name: 'llm', upstream: model.url });
    await deploy(gw, { kind: 'app', name: 'llm-ui', upstream: model.url });
    const got = await sdk(gw, dir, 'openai', { model: 'llm' });
    assert.deepEqual(got.deployments, [{ id: d.id, m_name: 'llm', status: 'DEPLOYED' }]);
    assert.deepEqual(got.endpoints, [`${gw.url}/runtime/models/${d.id}/v1`]);
    assert.deepEqual(got.get, { id: d.id, m_name: 'llm', access_path: `/runtime/models/${d.id}` });
    assert.equal(got.status, 'DEPLOYED');
    assert.equal(got.base_url, `${gw.url}/runtime/models/${d.id}/v1/`);
    assert.deepEqual(got.models, ['test-model']);
    assert.equal(got.content, 'Hello from the model');
    assert.equal(got.streamed, 'Hello from the model');
    assert.equal(model.lastHeaders?.authorization, undefined, 'the platform token stays at the gateway');
    assert.equal(got.stopped, true, 'stop_deployment removes the route');
    assert.deepEqual(got.after_stop, []);
  },
);

test(
  'the Python SDK reads capabilities here and at a paired peer over the ' + 'mesh, runs diagnose, and asks who it is',
  async (t) => {
    const dir = scratch(t);
    const untrusted = { federation: { peerTimeoutMs: 3000, allowUntrustedFederation: true } };
    // The SDK resolves names itself: the source answers on localhost, the peer is reached by the gateway only.
    const source = await startTestGateway(t, untrusted);
    const receiver = await startPeer(t, 'sdk-b', untrusted);
    const pair = await pairForMesh(source, receiver, null, 'sdk-peer');
    await allow(
      pair,
      (await source.request('GET', '/api/auth/users/me', { token: await source.adminToken() })).json.sub,
    );
    await deploy(source, { kind: 'model', name: 'llm', upstream: 'http://127.0.0.1:9' });
    const got = await sdk(source, dir, 'cluster_calls', { federation: 'sdk-peer' });
    const shape = {
      system_type: process.platform,
      available_platforms: ['local'],
      federation_count: 1,
      ray_ready: false,
    };
    assert.deepEqual({ ...got.local, ...shape }, got.local);
    assert.equal(got.local.local_node_id, pair.sourceClusterId);
    assert.equal(got.local.active_deployments, 1);
    assert.equal(got.local.gpu_count >= 0 && typeof got.local.os, 'string');
    assert.equal(got.remote.local_node_id, pair.receiverClusterId, 'the probe answered from the peer');
    assert.equal(got.remote.active_deployments, 0, 'the brokered caller sees no deployment there');
    assert.deepEqual(got.diagnose, { cluster_id: pair.sourceClusterId, has_issues: false, ids: [] });
    assert.equal(got.whoami.username, 'admin');
    assert.deepEqual(got.whoami.roles, ['admin']);
  },
);

test(
  'the Python SDK gets forward-auth headers (never the token), an RSA ' + 'JWKS, and PATs listed with ttl_seconds',
  async (t) => {
    const dir = scratch(t);
    const gw = await startTestGateway(t);
    const got = await sdk(gw, dir, 'auth_calls', {});
    const me = (await gw.request('GET', '/api/whoami', { token: await gw.adminToken() })).json;
    assert.deepEqual(got.headers, { user_id: me.sub, user_name: 'admin', roles: ['admin'], auth_token: null });
    assert.deepEqual(got.refused, { type: 'AuthenticationError', status: 401 });
    assert.deepEqual(got.jwks, [['RSA', 'RS256', true, true]]);
    assert.deepEqual(got.pats, [['ci', 3600]]);
  },
);

test("the Python SDK's check_access returns an allow, and raises on a deny: 403 access_denied", async (t) => {
  const dir = scratch(t);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const bob = await gw.userToken('bob');
  const dataset = { namespace: 'dataset', id: 'urn:li:dataset:(urn:li:dataPlatform:file,sales,PROD)' };
  const tuple = (relation: string) => ({ subject: { namespace: 'user', id: bob.id }, relation, object: dataset });
  const granted = await gw.request('POST', '/api/auth/tuples', { token: admin, json: tuple('viewer') });
  assert.equal(granted.status, 204, granted.text);
  const got = await sdk(gw, dir, 'authz_check', { checks: { viewer: tuple('viewer'), owner: tuple('owner') } });
  assert.deepEqual(got.viewer, { allow: true, reason: 'direct_tuple' });
  assert.deepEqual(got.owner, {
    raised: 'APIError',
    status: 403,
    detail: 'access_denied',
    allow: false,
    reason: 'no_matching_tuple',
  });
});

test(
  'the Python SDK run(recoverable=True) reports the marker, audit_actor, ' + 'a marker-less success and a failure',
  async (t) => {
    const dir = scratch(t);
    const gw = await startTestGateway(t);
    const entrypoints = {
      marker: `echo '${MARKER}{"answer":42}'`,
      plain: 'echo no marker here',
      failing: 'echo boom >&2; exit 3',
    };
    const got = await sdk(gw, dir, 'jobs_calls', { entrypoints });
    const me = (await gw.request('GET', '/api/whoami', { token: await gw.adminToken() })).json;
    assert.deepEqual(got.marker, { status: 'SUCCEEDED', result: { answer: 42 }, audit_actor: me.sub, error: null });
    assert.deepEqual(got.plain, { status: 'SUCCEEDED', result: null, audit_actor: null, error: null });
    assert.equal(got.failing.status, 'FAILED');
    assert.equal(got.failing.result, null);
    assert.equal(got.failing.audit_actor, me.sub);
    assert.equal(typeof got.failing.error, 'string', 'the SDK user learns why it failed');
  },
);

test(
  'the Python SDK adds and removes a container member and reads and ' +
    'deletes a secret through the path-style routes',
  async (t) => {
    const dir = scratch(t);
    const gw = await startTestGateway(t);
    const got = await sdk(gw, dir, 'catalog_paths', {});
    const dataset = 'urn:li:dataset:(urn:li:dataPlatform:file,member,PROD)';
    assert.deepEqual(got.added, { message: 'ok' });
    assert.deepEqual(got.listed, [dataset]);
    assert.deepEqual(got.removed, { message: 'removed' });
    assert.equal(got.secret.urn, 'urn:li:dataHubSecret:pg/pass');
    assert.equal(got.secret.value, null);
    assert.equal(got.gone, 'NotFoundError');
  },
);

test('the Python SDK retrieval wrapper raises the right exception with a readable message', async (t) => {
  const dir = scratch(t);
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [join(dir, 'allowed')] } });
  const admin = await gw.adminToken();
  // A dataset another user cannot see is "not found" to them (no existence oracle); a path outside the roots is a 403.
  const outside = await createDataset(gw, admin, {
    name: 'outside',
    platform: 'file',
    properties: { path: join(dir, 'elsewhere.csv') },
  });
  const missing = 'urn:li:dataset:(urn:li:dataPlatform:file,none,PROD)';
  const got = await sdk(gw, dir, 'retrieval_errors', {
    tokens: { missing: admin, denied: admin },
    urns: { missing, denied: outside },
  });
  assert.equal(got.missing.type, 'DatasetNotFoundError');
  assert.equal(got.denied.type, 'AuthorizationError');
  assert.equal(got.missing.message, 'Dataset not found', 'a string detail (the catalog answers the contract literal)');
  // For a structured detail the wrapper prints the body whole: the reason stays machine-readable, and a sentence
  // beside it makes the exception read as prose.
  const denied = JSON.parse(got.denied.message).detail;
  assert.deepEqual(
    [denied.reason, denied.message],
    ['path_not_allowed', "The dataset's path is outside the folders retrieval may read."],
  );
});

test(
  'the Python SDK reads Arrow Flight with flight_batches: 3/4/5 ' +
    'clearance rows, COMPLETED, a replayed handshake refused',
  async (t) => {
    const { gw, dir, urn, tokens } = await clearanceReaders(t, 'jsonl', 'flight');
    const got = await sdk(gw, dir, 'flight', { urn, tokens });
    for (const [clearance, count] of [
      ['U', 3],
      ['S', 4],
      ['TS', 5],
    ] as const) {
      assert.equal(got[clearance].protocol, 'arrow-flight');
      assert.deepEqual(got[clearance].rows, CLEARANCE_ROWS.slice(0, count), clearance);
      assert.equal(got[clearance].status, 'COMPLETED', clearance);
      // The SDK maps the refused replay (UNAUTHENTICATED) to its AuthenticationError, and does not retry it.
      assert.equal(got[clearance].replay, 'AuthenticationError', clearance);
    }
  },
);

/** A gateway with the clearance fixture as a gated file dataset, and a viewer token per clearance U, S, TS. */
async function clearanceReaders(t: { after(fn: () => unknown): void }, format: 'csv' | 'jsonl', prefix: string) {
  const dir = scratch(t);
  const path = writeAllFormats(dir, 'clearance', CLEARANCE_ROWS)[format];
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [dir] } });
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, { name: 'clearance', platform: 'file', properties: { path } });
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  assert.equal(
    (await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`, { token: admin, json: gate }))
      .status,
    200,
  );
  const tokens: Record<string, string> = {};
  for (const clearance of ['U', 'S', 'TS']) {
    const user = await gw.userToken(`${prefix}-${clearance}`, { attributes: { clearance } });
    grantViewer(gw, urn, user.id);
    tokens[clearance] = user.token;
  }
  return { gw, dir, urn, tokens };
}
