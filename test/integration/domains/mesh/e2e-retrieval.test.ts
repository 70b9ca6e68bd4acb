/**
 * Retrieval through the mesh, end to end (per-record gates
 * evaluated on the receiver with the caller's attributes): on the receiver a filesystem dataset with the clearance
 * fixture (U, U, U, S, TS) bound to the clearance gate; shared-realm
 * personas whose real tokens carry clearance U, S, TS create SSE jobs
 * through /api/mesh/{fed}/retrieval/jobs and drain the stream across the
 * hop: 3/4/5 rows, gate_audit.filtered true/true/false. The stream is shown
 * to arrive incrementally, and a forged X-KZ-Mesh-User-Attributes changes
 * nothing in shared_idp.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request as undiciRequest } from 'undici';
import { MESH } from '../../../../gateway/mesh/headers.ts';
import { flightGet, startFlightClient } from '../../../helpers/flight.ts';
import type { After, TestGateway } from '../../../helpers/gateway.ts';
import { allow, craft, PERSONAS, sharedIdpMesh } from '../../../helpers/mesh.ts';
import type { Persona } from '../../../helpers/peers/oidc.ts';
import {
  createDataset,
  readSseAt,
  type SseEvent,
  type SseResult,
  sseEvents,
  sseRows,
} from '../../../helpers/retrieval.ts';
import { CLEARANCE_ROWS, writeAllFormats } from '../../../helpers/retrieval-fixtures.ts';

const CLEARANCE_GATE = {
  type: 'platform.gates.clearance.ClearanceGate',
  config: { classification_field: 'classification' },
};
const footer = (filtered: boolean) => ({ filtered, included: null, redacted: null, total: null, gate: null });
const byId = (rows: Record<string, unknown>[]) => rows.toSorted((a, b) => String(a.id).localeCompare(String(b.id)));
const PERSONAS_TS: Persona[] = [
  ...PERSONAS,
  { username: 'fed-clr-ts', password: 'pw-ts', claims: { clearance: 'TS' } },
];
const CALLERS = [
  { username: 'fed-clr-u', password: 'pw-u', rows: 3, filtered: true },
  { username: 'fed-clr-s', password: 'pw-s', rows: 4, filtered: true },
  { username: 'fed-clr-ts', password: 'pw-ts', rows: 5, filtered: false },
];
const BIG_ROWS = 60_000;

/** Receiver with the gated clearance dataset and a large plain one, every persona allowlisted as viewer on both. */
async function retrievalMesh(t: After) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-mesh-e2e-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const paths = writeAllFormats(root, 'clearance', CLEARANCE_ROWS);
  const big = join(root, 'big.jsonl');
  const bigRow = (i: number) => JSON.stringify({ id: `b${String(i).padStart(6, '0')}`, v: 'x'.repeat(40) });
  writeFileSync(big, `${Array.from({ length: BIG_ROWS }, (_, i) => bigRow(i)).join('\n')}\n`);
  const mesh = await sharedIdpMesh(t, { personas: PERSONAS_TS, receiver: { retrieval: { fsRoots: [root] } } });
  const admin = await mesh.receiver.adminToken();
  const urn = await createDataset(mesh.receiver, admin, {
    name: 'mini-clearance',
    platform: 'file',
    properties: { path: paths.jsonl },
  });
  const bigUrn = await createDataset(mesh.receiver, admin, {
    name: 'big',
    platform: 'file',
    properties: { path: big },
  });
  const gate = await mesh.receiver.request('PUT', `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`, {
    token: admin,
    json: CLEARANCE_GATE,
  });
  assert.equal(gate.status, 200, gate.text);
  const recipe = [urn, bigUrn].map((u) => ({
    subject: 'user:{{user_id}}',
    relation: 'viewer',
    object: `dataset:${u}`,
  }));
  for (const { username } of CALLERS) await allow(mesh.pair, mesh.oidc.subjectOf(username), recipe);
  return { ...mesh, urn, bigUrn };
}

async function meshJob(
  source: TestGateway,
  fed: string,
  token: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const res = await source.request('POST', `/api/mesh/${fed}/retrieval/jobs`, { token, json: body, headers });
  assert.equal(res.status, 201, res.text);
  return res.json;
}

function assertClearance(sse: SseResult, rows: number, filtered: boolean, who: string): void {
  assert.equal(sse.status, 200, who);
  assert.match(sse.contentType, /^text\/event-stream/);
  assert.deepEqual(
    byId(sseRows(sse)),
    byId(CLEARANCE_ROWS.slice(0, rows)),
    `${who}: exactly the rows its clearance allows`,
  );
  const chunks = sse.events.filter((e) => e.event === 'chunk');
  assert.ok(chunks.length >= 1);
  for (const chunk of chunks)
    assert.deepEqual(chunk.data.metadata.gate_audit, footer(filtered), `${who}: four legacy keys present and null`);
  const complete = sse.events.at(-1);
  assert.equal(complete?.event, 'complete');
  assert.deepEqual(complete?.data.metadata, { filtered, gate_audit: footer(filtered) });
}

test(
  'clearance U/S/TS shared-realm callers stream 3/4/5 rows through the ' + 'mesh, filtered true/true/false',
  async (t) => {
    const { oidc, pair, source, urn } = await retrievalMesh(t);
    for (const caller of CALLERS) {
      const token = await oidc.passwordToken(caller.username, caller.password);
      const job = await meshJob(source, pair.sourceFedId, token, { dataset_urn: urn, transport: 'sse' });
      assert.equal(job.transport, 'sse');
      const sse = await readSseAt(source, `/api/mesh/${pair.sourceFedId}/retrieval/jobs/${job.job_id}/stream`, token);
      assertClearance(sse, caller.rows, caller.filtered, caller.username);
      const status = await source.request('GET', `/api/mesh/${pair.sourceFedId}/retrieval/jobs/${job.job_id}`, {
        token,
      });
      assert.equal(status.json.status, 'COMPLETED', status.text);
      assert.equal(status.json.progress.rows_processed, caller.rows);
    }
    // Jobs are the caller's own, also across the hop.
    const u = await oidc.passwordToken('fed-clr-u', 'pw-u');
    const ts = await oidc.passwordToken('fed-clr-ts', 'pw-ts');
    const job = await meshJob(source, pair.sourceFedId, ts, { dataset_urn: urn, transport: 'sse' });
    const foreign = await source.request('GET', `/api/mesh/${pair.sourceFedId}/retrieval/jobs/${job.job_id}/stream`, {
      token: u,
    });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.json.detail.reason, 'retrieval_job_not_found');
    // A mesh caller's options pass the same check as a local caller's: no path re-targets the dataset.
    const path = `/api/mesh/${pair.sourceFedId}/retrieval/jobs`;
    const retarget = await source.request('POST', path, {
      token: u,
      json: { dataset_urn: urn, options: { path: '/etc/passwd' } },
    });
    assert.equal(retarget.status, 422, retarget.text);
    assert.deepEqual([retarget.json.detail.reason, retarget.json.detail.key], ['option_not_allowed', 'path']);
  },
);

test('a forged X-KZ-Mesh-User-Attributes in shared_idp yields only the token’s rows', async (t) => {
  const { oidc, pair, source, receiver, urn } = await retrievalMesh(t);
  const token = await oidc.passwordToken('fed-clr-u', 'pw-u');
  const forged = { [MESH.userAttributes]: '{"clearance":"TS"}', 'X-User-Attributes': '{"clearance":"TS"}' };

  // Through the source: client-sent mesh headers are dropped and regenerated from the caller's token.
  const viaSource = await meshJob(source, pair.sourceFedId, token, { dataset_urn: urn, transport: 'sse' }, forged);
  const path = `/api/mesh/${pair.sourceFedId}/retrieval/jobs/${viaSource.job_id}/stream`;
  assertClearance(await readSseAt(source, path, token), 3, true, 'forged via source');

  // A malicious source signing the forged attributes itself (valid PSK): shared_idp ignores them.
  const body = Buffer.from(JSON.stringify({ dataset_urn: urn, transport: 'sse' }));
  const envelope = {
    userId: oidc.subjectOf('fed-clr-u'),
    peerToken: token,
    userAttributes: '{"clearance":"TS"}',
    roles: 'admin',
  };
  const create = craft(pair, 'POST', '/api/retrieval/jobs', { ...envelope, body });
  const created = await receiver.request('POST', create.path, {
    headers: { ...create.headers, 'content-type': 'application/json' },
    body,
  });
  assert.equal(created.status, 201, created.text);
  const stream = craft(pair, 'GET', `/api/retrieval/jobs/${created.json.job_id}/stream`, envelope);
  const res = await undiciRequest(`${receiver.gateway.httpsUrl}${stream.path}`, {
    headers: stream.headers,
    dispatcher: receiver.agent,
  });
  assert.equal(res.statusCode, 200);
  const events: SseEvent[] = [];
  for await (const event of sseEvents(res.body)) events.push(event);
  assert.deepEqual(
    byId(sseRows({ events })),
    byId(CLEARANCE_ROWS.slice(0, 3)),
    'the token says U: three rows, whatever the envelope claims',
  );
  assert.deepEqual(events.at(-1)?.data.metadata, { filtered: true, gate_audit: footer(true) });
});

test(
  'the SSE stream arrives incrementally across the hop: the first chunk ' + 'is read while the job still runs',
  async (t) => {
    const { oidc, pair, source, bigUrn } = await retrievalMesh(t);
    const token = await oidc.passwordToken('fed-clr-s', 'pw-s');
    const job = await meshJob(source, pair.sourceFedId, token, {
      dataset_urn: bigUrn,
      transport: 'sse',
      batch_size: 20,
    });
    const res = await undiciRequest(
      `${source.gateway.httpsUrl}/api/mesh/${pair.sourceFedId}/retrieval/jobs/${job.job_id}/stream`,
      {
        headers: { authorization: `Bearer ${token}` },
        dispatcher: source.agent,
      },
    );
    assert.equal(res.statusCode, 200);
    const events = sseEvents(res.body);
    const first = (await events.next()).value;
    assert.equal(first?.event, 'chunk');
    assert.equal(first?.data.sequence, 1);
    assert.equal(first?.data.data.length, 20);
    // The client holds the stream: backpressure keeps the receiver from finishing the read.
    const during = await source.request('GET', `/api/mesh/${pair.sourceFedId}/retrieval/jobs/${job.job_id}`, { token });
    assert.equal(during.json.status, 'RUNNING', 'the first event was read before the last one was produced');
    assert.ok(during.json.progress.rows_processed < BIG_ROWS, `read so far: ${during.json.progress.rows_processed}`);
    let rows = first?.data.data.length as number;
    let last = first;
    for await (const event of events) {
      if (event.event === 'chunk') rows += event.data.data.length;
      last = event;
    }
    assert.equal(last?.event, 'complete');
    assert.equal(rows, BIG_ROWS);
    assert.equal(last?.data.rows, BIG_ROWS);
    const after = await source.request('GET', `/api/mesh/${pair.sourceFedId}/retrieval/jobs/${job.job_id}`, { token });
    assert.equal(after.json.status, 'COMPLETED');
  },
);

test(
  'Arrow Flight through the mesh: a job created across the hop is read ' + 'by pyarrow from the receiver, 3/4/5 rows',
  async (t) => {
    const { oidc, pair, source, receiver, urn } = await retrievalMesh(t);
    const flight = await startFlightClient(t, receiver.gateway.caPem);
    for (const caller of CALLERS) {
      const token = await oidc.passwordToken(caller.username, caller.password);
      const job = await meshJob(source, pair.sourceFedId, token, { dataset_urn: urn, transport: 'grpc' });
      // The handshake names the gateway that holds the job and serves its data: the receiver.
      const location = new URL(job.grpc.endpoints[0].location);
      assert.equal(location.protocol, 'grpc+tls:');
      assert.equal(location.port, String(receiver.port));
      const get = {
        ...flightGet(job),
        location: `grpc+tls://127.0.0.1:${receiver.port}`,
        override_hostname: location.hostname,
      };
      const got = await flight.get(get);
      assert.equal(got.error, undefined, JSON.stringify(got.error));
      assert.deepEqual(byId(got.data ?? []), byId(CLEARANCE_ROWS.slice(0, caller.rows)), caller.username);
      assert.deepEqual(got.metadata?.at(-1).gate_audit, footer(caller.filtered), caller.username);
      const status = await source.request('GET', `/api/mesh/${pair.sourceFedId}/retrieval/jobs/${job.job_id}`, {
        token,
      });
      assert.equal(status.json.status, 'COMPLETED', status.text);
      // Single use across the hop too.
      assert.equal((await flight.get(get)).error?.type, 'FlightUnauthenticatedError');
    }
  },
);
