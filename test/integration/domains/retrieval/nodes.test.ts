/**
 * Retrieval on a cluster of two nodes sharing PostgreSQL: a job created on one node streams from the other (SSE,
 * and gRPC with the token the first node handed out); a job bound to its node by a credential override redirects
 * its SSE stream there; a cancel on either node holds on both.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { startTwoNodes } from '../../../helpers/engine.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';
import {
  createDataset,
  createJob,
  eventually,
  grantViewer,
  grpcRows,
  readGrpc,
  readSse,
  sseRows,
  V1,
} from '../../../helpers/retrieval.ts';
import { sampleRows, writeAllFormats } from '../../../helpers/retrieval-fixtures.ts';
import { startSlackApi } from '../../../helpers/slack-api.ts';

async function cluster(t: Parameters<typeof startTwoNodes>[0]) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-nodes-fs-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const rows = sampleRows(300);
  const { csv } = writeAllFormats(root, 'sample', rows);
  const [a, b] = await startTwoNodes(t, { retrieval: { fsRoots: [root] } });
  const admin = await a.adminToken();
  const alice = await a.userToken('alice');
  const urn = await createDataset(a, admin, { name: 'sample', platform: 'file', properties: { path: csv } });
  grantViewer(a, urn, alice.id);
  return { a, b, rows, urn, alice: alice.token, aliceId: alice.id };
}

/** The viewer grant made on node a reaches node b through the change feed, within its bound. */
function seesJob(node: TestGateway, token: string, jobId: string): Promise<void> {
  return eventually(
    async () => (await node.request('GET', `/api/retrieval/jobs/${jobId}`, { token })).status === 200,
    'the other node sees the grant',
  );
}

test('a job created on one node streams from the other, over SSE and over gRPC with its token', async (t) => {
  const { a, b, rows, urn, alice } = await cluster(t);
  const sse = await createJob(a, alice, { dataset_urn: urn, transport: 'sse' });
  await seesJob(b, alice, sse.job_id);
  const viaB = await readSse(b, sse.job_id, alice);
  assert.deepEqual(sseRows(viaB), rows, JSON.stringify([viaB.status, viaB.json, viaB.events.slice(-2)]));
  const grpc = await createJob(a, alice, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 });
  assert.deepEqual(grpcRows(await readGrpc(b, grpc)), rows, "node a's stream token verifies on node b");
  const canceled = await createJob(a, alice, { dataset_urn: urn, transport: 'sse' });
  assert.equal(
    (await b.request('POST', `/api/retrieval/jobs/${canceled.job_id}/cancel`, { token: alice })).status,
    200,
  );
  const refused = await readSse(a, canceled.job_id, alice);
  assert.equal(refused.status, 409, 'canceled on node b, refused on node a');
});

test('a job whose credential override lives on its node streams from there through any node', async (t) => {
  // A Slack dataset with no stored token: the job's override (the token) is what reads it. Started first, stopped
  // after the gateways (their pooled connections to it close with them).
  const messages = [1, 2, 3].map((n) => ({ type: 'message', text: `m${n}`, ts: `1700000000.00000${n}` }));
  const slack = await startSlackApi(t, 'xoxb-held-by-a', [{ id: 'C0NODES', name: 'nodes', messages }]);
  const { a, b, alice, aliceId } = await cluster(t);
  const admin = await a.adminToken();
  const properties = { api_url: slack.url, channels: ['nodes'] };
  const urn = await createDataset(a, admin, { name: 'nodes', platform: 'slack', properties });
  grantViewer(a, urn, aliceId);
  const override = 'xoxb-held-by-a';
  const job = await createJob(a, alice, { dataset_urn: urn, transport: 'sse', credential_override: override });
  await seesJob(b, alice, job.job_id);
  const viaB = await readSse(b, job.job_id, alice);
  assert.equal(viaB.status, 200);
  assert.deepEqual(
    sseRows(viaB).map((m) => m.text),
    ['m1', 'm2', 'm3'],
    'node b sends the stream of node a, which holds the override, on',
  );
  // A request that came from another node already (or claims to) is not sent on again: it is redirected.
  const path = `/api/retrieval/jobs/${job.job_id}/stream`;
  const answer = await request(`${b.gateway.httpsUrl}${path}`, {
    headers: { authorization: `Bearer ${alice}`, accept: 'text/event-stream', 'x-meshgate-node-hop': 'elsewhere' },
    dispatcher: b.agent,
  });
  await answer.body.dump();
  assert.equal(answer.statusCode, 307);
  assert.equal(answer.headers.location, `${a.url}${path}`, 'to the node that holds the override');
  assert.ok(!JSON.stringify(answer.headers).includes(override), 'the override never leaves its node');
});
