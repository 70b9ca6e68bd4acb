/**
 * A dataset's secret reference is bound to one secret, end to end through a
 * real PostgreSQL: bob's dataset reads with his secret; once he deletes it,
 * a secret created again under the same name — by bob or by an admin, even
 * holding credentials the server would accept — is never used: 409
 * secret_unavailable until bob writes the dataset again (and only his own
 * secret binds). A loopback listener speaking the start of the Postgres
 * protocol records what a dataset's reads send, proving the admin's value
 * never leaves the gateway.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { startTestGateway, type TestGateway } from '../../../../../helpers/gateway.ts';
import { startPostgres } from '../../../../../helpers/peers/postgres.ts';
import { createDataset, readSse } from '../../../../../helpers/retrieval.ts';

interface Recorder {
  port: number;
  connections: number;
  received: Buffer;
}

// AuthenticationCleartextPassword (PostgreSQL protocol, "Message Formats"): the client answers with the password.
const ASK_CLEARTEXT_PASSWORD = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]);

/** A loopback listener that asks every client for its password in clear text and keeps all bytes it receives. */
async function startRecorder(t: { after(fn: () => unknown): void }): Promise<Recorder> {
  const sockets = new Set<Socket>();
  const recorder: Recorder = { port: 0, connections: 0, received: Buffer.alloc(0) };
  const server = createServer((socket) => {
    sockets.add(socket);
    recorder.connections++;
    let asked = false;
    socket.on('data', (chunk) => {
      recorder.received = Buffer.concat([recorder.received, chunk]);
      if (!asked) socket.write(ASK_CLEARTEXT_PASSWORD);
      else socket.destroy(); // the password message arrived: nothing more to learn
      asked = true;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  recorder.port = (server.address() as { port: number }).port;
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return recorder;
}

const job = (gw: TestGateway, token: string, datasetUrn: string, transport = 'inline') =>
  gw.request('POST', '/api/retrieval/jobs', { token, json: { dataset_urn: datasetUrn, transport } });

type Refusal = { status: number; json: { detail: { reason: string; secret_urn: string } } };

function assertUnavailable(res: Refusal, secretUrn: string): void {
  assert.equal(res.status, 409, JSON.stringify(res.json));
  assert.equal(res.json.detail.reason, 'secret_unavailable');
  assert.equal(res.json.detail.secret_urn, secretUrn, 'names the reference as written');
}

test('a deleted secret is never replaced by one re-created under its name, by the same user or an admin', async (t) => {
  const pg = await startPostgres(t);
  const bobPassword = randomBytes(18).toString('base64url');
  await pg.psql(`
    CREATE TABLE orders (id int, item text);
    INSERT INTO orders VALUES (1, 'tea'), (2, 'cake');
    CREATE ROLE bob_reader LOGIN PASSWORD '${bobPassword}';
    GRANT SELECT ON orders TO bob_reader;`);
  const recorder = await startRecorder(t);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const bob = await gw.userToken('bob');
  const bobValue = JSON.stringify({ user: 'bob_reader', password: bobPassword });
  // Valid superuser credentials: if the gateway used them, the read would succeed.
  const adminValue = JSON.stringify({ user: pg.user, password: pg.password });
  const createSecret = (token: string, value: string) => {
    const json = { name: 'prod-db', value };
    return gw.request('POST', '/api/catalog/secrets/', { token, json });
  };
  const deleteSecret = (urn: string) => gw.request('DELETE', `/api/catalog/secrets/v2/${urn}`, { token: bob.token });
  const write = (token: string, urn: string, json: Record<string, unknown>) =>
    gw.request('PATCH', `/api/catalog/datasets/v2/${urn}`, { token, json: { properties: json } });
  const prodDb = (await createSecret(bob.token, bobValue)).json as string;
  const properties = { host: pg.host, port: pg.port, database: pg.database, secret_urn: prodDb };
  const orders = await createDataset(gw, bob.token, { name: 'orders', platform: 'postgres', properties });
  const toRecorder = { host: '127.0.0.1', port: recorder.port, table: 'orders', secret_urn: prodDb };
  const recorded = await createDataset(gw, bob.token, { name: 'rec', platform: 'postgres', properties: toRecorder });
  const rows = [
    { id: 1, item: 'tea' },
    { id: 2, item: 'cake' },
  ];

  const read = await job(gw, bob.token, orders);
  assert.equal(read.status, 201, read.text);
  assert.deepEqual(read.json.inline.data, rows);
  assert.notEqual((await job(gw, bob.token, recorded)).status, 201, 'the recorder is no database');
  assert.ok(recorder.received.includes(bobPassword), 'control: a read sends the bound secret to the server');
  const pending = await job(gw, bob.token, orders, 'sse');
  assert.equal(pending.status, 201);

  // The same user deletes and creates the secret again: a new secret, not bound until bob writes the dataset.
  assert.equal((await deleteSecret(prodDb)).status, 204);
  assertUnavailable(await job(gw, bob.token, orders), prodDb);
  const opened = await readSse(gw, pending.json.job_id, bob.token);
  assert.equal(opened.status, 409, 'a stream opened after the delete is refused too');
  assert.equal(opened.json.detail.reason, 'secret_unavailable');
  assert.equal((await createSecret(bob.token, bobValue)).status, 201);
  assertUnavailable(await job(gw, bob.token, orders), prodDb);
  assert.equal((await write(bob.token, orders, properties)).status, 200);
  assert.deepEqual((await job(gw, bob.token, orders)).json.inline.data, rows, 'writing the dataset again binds anew');

  // bob deletes it; an admin creates `prod-db` holding the admin's own (working) credentials.
  assert.equal((await deleteSecret(prodDb)).status, 204);
  assert.equal((await createSecret(admin, adminValue)).status, 201);
  const connections = recorder.connections;
  const refusals = [await job(gw, bob.token, orders), await job(gw, bob.token, recorded)];
  refusals.push(await job(gw, admin, recorded));
  for (const res of refusals) assertUnavailable(res, prodDb);
  // bob cannot bind the admin's secret by writing his dataset again.
  const bobWrite = await write(bob.token, orders, properties);
  assert.equal(bobWrite.status, 200, 'the reference was already there: the write keeps its binding');
  assertUnavailable(await job(gw, bob.token, orders), prodDb);
  const again = { name: 'again', platform: 'postgres', properties };
  const fresh = await gw.request('POST', '/api/catalog/datasets/', { token: bob.token, json: again });
  assert.equal(fresh.status, 403, 'a new reference to the admin secret is refused at write');
  assert.equal(fresh.json.detail.reason, 'secret_reference_forbidden');
  // An admin writing bob's dataset binds the admin's secret on the admin's authority: bob's reads use it where
  // the admin pointed it, and bob cannot point it anywhere else.
  const adminWrite = await write(admin, orders, properties);
  assert.equal(adminWrite.status, 200);
  assert.deepEqual((await job(gw, bob.token, orders)).json.inline.data, rows);
  const retarget = await write(bob.token, orders, toRecorder);
  assert.deepEqual([retarget.status, retarget.json.detail.reason], [403, 'secret_reference_forbidden']);
  assert.deepEqual(
    (await job(gw, bob.token, orders)).json.inline.data,
    rows,
    'still read from the admin-chosen server',
  );

  assert.equal(recorder.connections, connections, 'no connection was made after the delete');
  assert.ok(!recorder.received.includes(pg.password), "the admin's value never reached the dataset's server");
  const seen = [...refusals, adminWrite, bobWrite, fresh, retarget]
    .map((r) => r.text)
    .concat(gw.logs)
    .join('\n');
  for (const value of [pg.password, bobPassword]) assert.ok(!seen.includes(value), 'no value in a response or log');
});
