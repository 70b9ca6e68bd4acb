/**
 * The Hive source against a real HiveServer2 that checks passwords (CUSTOM
 * authentication with the peer's own password list) and serves both
 * transports (`hive.server2.transport.mode=all`): binary Thrift with SASL
 * PLAIN and Thrift over HTTP at /cliservice with Basic authentication. The
 * right password reads rows on either; a wrong or missing one is 403
 * `source_auth_failed`, the password in no answer and no log line; the
 * transport settings are the owner's, which no viewer's option re-targets.
 * Over HTTP a HiveServer2 session outlives its connections, so every read
 * closes the session it opened, whether it read rows or failed.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { csvTable, startHive } from '../../../../../helpers/peers/hive.ts';
import { createDataset, createJob, createSecret, grantViewer, readSse } from '../../../../../helpers/retrieval.ts';
import { sharedPeer } from '../../../../../helpers/retrieval-sources.ts';

const ROWS = Array.from({ length: 5 }, (_, i) => ({ id: i + 1, name: `n${i + 1}` }));
const PASSWORD = 'Right-Passw0rd-7f3a';
const WRONG = 'Wrong-Passw0rd-91c2';

/** One HiveServer2 for the file: both transports, the user `ann`, a table `items` of ROWS. */
const server = sharedPeer(async (t) => {
  const peer = await startHive(t, { users: { ann: PASSWORD }, http: true });
  await csvTable(
    peer,
    'items',
    'id INT, name STRING',
    ROWS.map((r) => `${r.id},${r.name}`),
  );
  return peer;
});

async function world(t: { after(fn: () => unknown): void }) {
  const peer = await server();
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const credentials = (password: string) =>
    createSecret(gw, admin, `hive-ann-${password}`, JSON.stringify({ user: 'ann', password }));
  const right = await credentials(PASSWORD);
  const wrong = await credentials(WRONG);
  let n = 0;
  /** A dataset on `items` as `ann` with the right password, over `transport`, unless `properties` say otherwise. */
  const dataset = (transport: 'binary' | 'http', properties: Record<string, unknown> = {}) =>
    createDataset(gw, admin, {
      name: `default.items-${++n}`,
      platform: 'hive',
      properties: {
        host: peer.host,
        ...(transport === 'http' ? { transport, port: peer.httpPort } : { port: peer.port }),
        table: 'items',
        auth: 'PLAIN',
        secret_urn: right,
        ...properties,
      },
    });
  const read = (urn: string, extra: Record<string, unknown> = {}, token = admin) =>
    gw.request('POST', '/api/retrieval/jobs', { token, json: { dataset_urn: urn, ...extra } });
  /** Status, reason and problem of a refused read, which never holds a password. */
  const refusal = async (urn: string, extra: Record<string, unknown> = {}) => {
    const res = await read(urn, extra);
    for (const secret of [PASSWORD, WRONG]) assert.ok(!res.text.includes(secret), 'no password in the answer');
    const { reason, problem, option, key } = res.json.detail ?? {};
    return { status: res.status, reason, problem, option, key };
  };
  const rows = async (urn: string) => (await createJob(gw, admin, { dataset_urn: urn })).inline.data;
  return { gw, peer, admin, right, wrong, dataset, read, refusal, rows };
}

/** Neither password, nor a Basic token made from it, in any log line. */
function assertNoPasswordLogged(logs: readonly string[]): void {
  const all = logs.join('');
  for (const password of [PASSWORD, WRONG]) {
    assert.ok(!all.includes(password), 'no password in a log line');
    assert.ok(!all.includes(Buffer.from(`ann:${password}`).toString('base64')), 'no Basic token in a log line');
  }
}

test('hiveserver2 with passwords: the right one reads over binary and http; a wrong or none is 403', async (t) => {
  const w = await world(t);
  const authFailed = (problem: string) => ({
    status: 403,
    reason: 'source_auth_failed',
    problem,
    option: undefined,
    key: undefined,
  });
  for (const transport of ['binary', 'http'] as const) {
    assert.deepEqual(await w.rows(await w.dataset(transport)), ROWS, transport);
    const problem = transport === 'binary' ? 'sasl authentication failed' : 'http authentication failed';
    const wrong = await w.dataset(transport, { secret_urn: w.wrong });
    assert.deepEqual(await w.refusal(wrong), authFailed(problem), `${transport}: a wrong password`);
    // A reader's own credentials go to the same server and are checked the same way.
    const override = JSON.stringify({ user: 'ann', password: WRONG });
    assert.deepEqual(
      await w.refusal(await w.dataset(transport), { credential_override: override }),
      authFailed(problem),
      `${transport}: a wrong credential_override`,
    );
    const unknown = JSON.stringify({ user: 'mallory', password: PASSWORD });
    assert.deepEqual(
      await w.refusal(await w.dataset(transport), { credential_override: unknown }),
      authFailed(problem),
      `${transport}: another user with ann's password`,
    );
  }
  // No Authorization header at all: HiveServer2's servlet answers 401 as to a wrong one.
  const anonymous = await w.dataset('http', { auth: 'NOSASL', secret_urn: undefined });
  assert.deepEqual(await w.refusal(anonymous), authFailed('http authentication failed'), 'http without credentials');
  // A streamed job says the same: an error event with the reason, the job FAILED, no rows.
  const job = await createJob(w.gw, w.admin, {
    dataset_urn: await w.dataset('http', { secret_urn: w.wrong }),
    transport: 'sse',
  });
  const stream = await readSse(w.gw, job.job_id, w.admin);
  assert.deepEqual(
    stream.events.map((e) => [e.event, e.data.reason]),
    [['error', 'source_auth_failed']],
  );
  const after = await w.gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: w.admin });
  assert.deepEqual([after.json.status, after.json.error], ['FAILED', 'source_auth_failed']);
  assertNoPasswordLogged(w.gw.logs);
});

test('hive http transport: a path HiveServer2 does not serve is 502, bad settings 422 before connecting', async (t) => {
  const w = await world(t);
  assert.deepEqual(await w.rows(await w.dataset('http', { http_path: '/cliservice' })), ROWS, 'a leading slash');
  assert.deepEqual(await w.refusal(await w.dataset('http', { http_path: 'elsewhere' })), {
    status: 502,
    reason: 'source_unavailable',
    problem: 'hiveserver2 answered http 405',
    option: undefined,
    key: undefined,
  });
  // Binary Thrift to the HTTP port, and HTTP to the binary port, read nothing.
  for (const wrongPort of [w.dataset('binary', { port: w.peer.httpPort }), w.dataset('http', { port: w.peer.port })]) {
    const refused = await w.refusal(await wrongPort);
    assert.deepEqual([refused.status, refused.reason], [502, 'source_unavailable']);
  }
  const cases: [Record<string, unknown>, string][] = [
    [{ transport: 'HTTP' }, 'transport'],
    [{ transport: 'websocket' }, 'transport'],
    [{ transport: 'binary', http_path: 'cliservice' }, 'http_path'],
    [{ http_path: '../admin' }, 'http_path'],
    [{ http_path: 'cliservice?x=1' }, 'http_path'],
    [{ http_path: 'cli%2fservice' }, 'http_path'],
    [{ http_path: '//evil.test/cliservice' }, 'http_path'],
    [{ http_path: 'a b' }, 'http_path'],
    [{ http_path: 7 }, 'http_path'],
    [{ http_path: 'x'.repeat(300) }, 'http_path'],
  ];
  for (const [properties, option] of cases) {
    // Port 1 has no listener: a connection attempt would answer 502, not 422.
    const refused = await w.refusal(await w.dataset('http', { port: 1, ...properties }));
    assert.deepEqual(
      [refused.status, refused.reason, refused.option],
      [422, 'source_options_invalid', option],
      JSON.stringify(properties),
    );
  }
});

test("hive transport settings are the owner's: a viewer cannot switch transport, path, port, auth", async (t) => {
  const w = await world(t);
  const urn = await w.dataset('http');
  const viewer = await w.gw.userToken('viewer');
  grantViewer(w.gw, urn, viewer.id);
  const viewerRead = (extra: Record<string, unknown>) => w.read(urn, extra, viewer.token);
  const viewerRows = await viewerRead({});
  assert.equal(viewerRows.status, 201, viewerRows.text);
  assert.deepEqual(viewerRows.json.inline.data, ROWS, 'the viewer reads the dataset as its owner set it');
  const options = [
    { transport: 'binary' },
    { http_path: 'elsewhere' },
    { port: w.peer.port },
    { host: '127.0.0.2' },
    { auth: 'NOSASL' },
    { ssl: true },
  ];
  for (const option of options) {
    const res = await viewerRead({ options: option });
    assert.deepEqual(
      [res.status, res.json.detail?.reason, res.json.detail?.key],
      [422, 'option_not_allowed', Object.keys(option)[0]],
      JSON.stringify(option),
    );
  }
  // Nor through a credential_override: it carries credentials only.
  const override = await viewerRead({
    credential_override: JSON.stringify({ user: 'ann', password: WRONG, transport: 'binary', http_path: 'x' }),
  });
  assert.deepEqual(
    [override.status, override.json.detail?.reason, override.json.detail?.in],
    [422, 'option_not_allowed', 'credential_override'],
  );
  assertNoPasswordLogged(w.gw.logs);
});

/** A relay in front of the peer's HTTP port that names each Thrift call passing through it. */
async function thriftCallRelay(t: { after(fn: () => unknown): void }, peer: { host: string; httpPort?: number }) {
  const calls: string[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    // TBinaryProtocol's strict message header: version and type (4 bytes), the name's length (4), the name.
    calls.push(body.subarray(8, 8 + body.readUInt32BE(4)).toString('latin1'));
    const options = { host: peer.host, port: peer.httpPort, method: req.method, path: req.url, headers: req.headers };
    httpRequest(options, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    }).end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const count = (name: string) => calls.filter((call) => call === name).length;
  return { port: (server.address() as AddressInfo).port, count };
}

test('hive http transport: every session a read opens is closed on HiveServer2, read or failed', async (t) => {
  const w = await world(t);
  const relay = await thriftCallRelay(t, w.peer);
  assert.deepEqual(await w.rows(await w.dataset('http', { port: relay.port })), ROWS);
  const missing = await w.refusal(await w.dataset('http', { port: relay.port, table: 'absent' }));
  assert.equal(missing.reason, 'source_not_found');
  const opened = relay.count('OpenSession');
  assert.ok(opened >= 2, `sessions opened: ${opened}`);
  // The close may follow the answer; HiveServer2 would otherwise keep each session until its idle timeout.
  const deadline = Date.now() + 10_000;
  while (relay.count('CloseSession') < opened) {
    assert.ok(Date.now() < deadline, `${relay.count('CloseSession')} of ${opened} sessions closed`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(relay.count('CloseSession'), opened);
});
