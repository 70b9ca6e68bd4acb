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
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { peerScript } from '../helpers/peers/process.ts';
import { createDataset, grantViewer } from '../helpers/retrieval.ts';
import { CLEARANCE_ROWS, writeAllFormats } from '../helpers/retrieval-fixtures.ts';
import { deploy, startModelServer } from '../helpers/upstreams.ts';

const execFileAsync = promisify(execFile);

async function sdk(gw: TestGateway, dir: string, scenario: string, args: Record<string, unknown>): Promise<any> {
  const python = await peerScript('sdk');
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, gw.gateway.caPem);
  const all = { base_url: `${gw.url}/api`, ca_file: caFile, token: await gw.adminToken(), ...args };
  // The SDK honours these; none may steer it away from the CA given here.
  const env = { ...process.env, REQUESTS_CA_BUNDLE: '', CURL_CA_BUNDLE: '', KAMIWAZA_VERIFY_SSL: '' };
  const { stdout } = await execFileAsync(python, [join(import.meta.dirname, '..', 'helpers', 'sdk_scenarios.py'), scenario, JSON.stringify(all)], { env });
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
  assert.deepEqual(got.grpc.locations, [`grpcs://${new URL(gw.url).host}`]);
  assert.equal(got.grpc.has_token, true);
});

test("the Python SDK reads the clearance fixture with each caller's token: 3, 4, 5 rows, gate_audit as the contract says", async (t) => {
  const dir = scratch(t);
  const path = writeAllFormats(dir, 'clearance', CLEARANCE_ROWS).csv;
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [dir] } });
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, { name: 'clearance', platform: 'file', properties: { path } });
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  assert.equal((await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`, { token: admin, json: gate })).status, 200);
  const tokens: Record<string, string> = {};
  for (const clearance of ['U', 'S', 'TS']) {
    const user = await gw.userToken(`sdk-${clearance}`, { attributes: { clearance } });
    grantViewer(gw, urn, user.id);
    tokens[clearance] = user.token;
  }
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
});

test('the Python SDK performs the clearance setup itself — declare, discover, catalog, bind, subjects and grants — and each persona reads 3, 4, 5 rows', async (t) => {
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
  for (const [username, clearance] of Object.entries(personas)) tokens[clearance] = await gw.login(username, 'persona-password');
  const read = await sdk(gw, dir, 'gated', { urn: got.urn, tokens });
  assert.deepEqual(
    ['U', 'S', 'TS'].map((c) => read[c].sse_rows.length),
    [3, 4, 5],
  );
});

test('the Python SDK finds a model deployment by name, chats through its runtime URL with the openai client, and stops it', async (t) => {
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
});
