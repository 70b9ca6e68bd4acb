/**
 * Stream tokens as credentials, from the attacker's side: a Flight ticket or a StreamData token of a user who has
 * since been disabled (or deleted) opens nothing, a stream the user is reading ends when they are disabled, and
 * a spent Flight ticket stays spent across a gateway restart — while a ticket issued before the restart and never
 * used still reads once after it, as docs/retrieval.md says (the key is kept with the cluster identity).
 * Real gateway, pyarrow's Flight client and a Connect gRPC client, TLS verified against the gateway's CA.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Code, ConnectError } from '@connectrpc/connect';
import { flightGet, startFlightClient } from '../../../helpers/flight.ts';
import { type After, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { createDataset, createJob, grantViewer, grpcClient, readGrpc, V1 } from '../../../helpers/retrieval.ts';
import { sampleRows } from '../../../helpers/retrieval-fixtures.ts';

/** A gateway, a JSON-lines dataset of `rows` rows, and a reader (not an admin) who may view it. */
async function world(t: After, rows = 30) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-stream-creds-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const path = join(root, 'rows.jsonl');
  writeFileSync(
    path,
    `${sampleRows(rows)
      .map((row) => JSON.stringify(row))
      .join('\n')}\n`,
  );
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, { name: 'rows', platform: 'file', properties: { path } });
  const reader = await gw.userToken('reader');
  grantViewer(gw, urn, reader.id);
  return { gw, admin, urn, reader };
}

async function setActive(gw: TestGateway, admin: string, userId: string, active: boolean): Promise<void> {
  const res = await gw.request('PUT', `/api/auth/users/${userId}`, { token: admin, json: { active } });
  assert.equal(res.status, 200, res.text);
}

/** The ConnectError a StreamData read ends with, or null when it completed. */
async function grpcFailure(read: () => Promise<unknown>): Promise<ConnectError | null> {
  try {
    await read();
    return null;
  } catch (error) {
    return ConnectError.from(error);
  }
}

test("a disabled user's Flight ticket and StreamData token are refused; enabled again, the token reads", async (t) => {
  const { gw, admin, urn, reader } = await world(t);
  const flight = await startFlightClient(t, gw.gateway.caPem);
  const flightJob = await createJob(gw, reader.token, { dataset_urn: urn, transport: 'grpc' });
  const v1Job = await createJob(gw, reader.token, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 });
  assert.equal((await readGrpc(gw, v1Job)).chunks.at(-1)?.final, true, 'the token reads while its user is enabled');

  await setActive(gw, admin, reader.id, false);
  const refused = await flight.get(flightGet(flightJob));
  assert.equal(refused.error?.type, 'FlightUnauthenticatedError', JSON.stringify(refused));
  assert.match(refused.error?.message ?? '', /grpc_token_invalid: user_disabled/);
  assert.equal(refused.rows, undefined);
  const v1 = await grpcFailure(() => readGrpc(gw, v1Job));
  assert.equal(v1?.code, Code.Unauthenticated, String(v1));
  assert.match(v1?.rawMessage ?? '', /user_disabled/);

  // Disabling suspends (docs/auth.md): enabled again, the unexpired re-usable token reads again.
  await setActive(gw, admin, reader.id, true);
  assert.equal((await readGrpc(gw, v1Job)).chunks.at(-1)?.final, true);
});

test('a stream in progress ends with retrieval_reader_disabled when its reader is disabled', async (t) => {
  // Far more than HTTP/2 flow control lets the gateway send before the client reads on: the stream is mid-way.
  const { gw, admin, urn, reader } = await world(t, 200_000);
  const job = await createJob(gw, reader.token, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 });
  const chunks = grpcClient(gw).streamData({ jobId: job.job_id, token: job.grpc.token, fromSequence: 0n });
  let received = 0;
  const failure = await grpcFailure(async () => {
    for await (const chunk of chunks) {
      assert.equal(chunk.final, false, 'the stream did not complete');
      if (++received > 1) continue;
      await setActive(gw, admin, reader.id, false);
      // The disable reaches the stream through the change feed; taken in now rather than on the next poll.
      gw.gateway.deps.feed.catchUp();
    }
  });
  assert.equal(failure?.code, Code.Unauthenticated, String(failure));
  assert.match(failure?.rawMessage ?? '', /retrieval_reader_disabled/);
  const status = await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: admin });
  assert.deepEqual([status.json.status, status.json.error], ['FAILED', 'retrieval_reader_disabled']);
});

test('a Flight ticket spent before a restart stays spent; one issued before it and unused reads once', async (t) => {
  const { gw, urn, reader } = await world(t);
  const job = await createJob(gw, reader.token, { dataset_urn: urn, transport: 'grpc' });
  // Each status read hands out a fresh single-use ticket.
  const status = await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: reader.token });
  const unused = { ...job, grpc: status.json.grpc };
  assert.notEqual(unused.grpc.token, job.grpc.token);
  const before = await startFlightClient(t, gw.gateway.caPem);
  assert.equal((await before.get(flightGet(job))).error, undefined);

  await gw.restart();
  const after = await startFlightClient(t, gw.gateway.caPem);
  const replay = await after.get(flightGet(job));
  assert.equal(replay.error?.type, 'FlightUnauthenticatedError', JSON.stringify(replay));
  assert.match(replay.error?.message ?? '', /already_used/);
  const read = await after.get(flightGet(unused));
  assert.equal(read.error, undefined, JSON.stringify(read.error));
  assert.equal(read.rows, 30);
  assert.match((await after.get(flightGet(unused))).error?.message ?? '', /already_used/);
});
