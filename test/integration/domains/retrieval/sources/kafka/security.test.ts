/**
 * The Kafka source against a real broker that runs with TLS and SASL
 * (startKafka with `tls` and `users`): an SSL listener and a SASL_SSL one
 * taking PLAIN and SCRAM-SHA-256/512, with a certificate for `localhost`
 * alone from a test CA (the gateway's own trust material code). Rows arrive
 * over each; a wrong password or user is 403 `source_auth_failed`; a
 * certificate from another CA, none to verify against, or another name is
 * 502 `source_tls_failed`; bad settings are 422 before any connection, and
 * no reader option reaches them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { ensureTlsMaterial } from '../../../../../../gateway/tls/material.ts';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { startKafka } from '../../../../../helpers/peers/kafka.ts';
import { createDataset, createJob, createSecret } from '../../../../../helpers/retrieval.ts';
import { sharedPeer } from '../../../../../helpers/retrieval-sources.ts';

const USERS = { alice: 'alicePassw0rd', bob: 'bobPassw0rd' };
const ROWS = Array.from({ length: 12 }, (_, i) => ({ n: i, label: `m${i}` }));
const TOPIC = 'secured';
const WRONG = 'wrongPassw0rd';

/** One broker for the file: its TLS listeners' certificate names localhost only. */
const broker = sharedPeer(async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-kafkatls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const server = await ensureTlsMaterial({ tlsDir: join(dir, 'ca'), names: ['localhost'], clusterName: 'kafka-test' });
  const other = await ensureTlsMaterial({
    tlsDir: join(dir, 'other'),
    names: ['localhost'],
    clusterName: 'kafka-other',
  });
  const peer = await startKafka(t, { tls: { certPem: server.certPem, keyPem: server.keyPem }, users: USERS });
  // The topic is written through the PLAINTEXT listener, which the gateway is never pointed at here.
  const bootstrapBrokers = [peer.bootstrapServers];
  const admin = new Admin({ clientId: 'test-admin', bootstrapBrokers });
  const producer = new Producer({
    clientId: 'test-producer',
    bootstrapBrokers,
    serializers: stringSerializers,
    idempotent: true,
  });
  try {
    await admin.createTopics({ topics: [TOPIC], partitions: 1, replicas: 1 });
    await producer.send({ messages: ROWS.map((r) => ({ topic: TOPIC, partition: 0, value: JSON.stringify(r) })) });
  } finally {
    await producer.close();
    await admin.close();
  }
  return { peer, ca: server.caPem, otherCa: other.caPem };
});

async function world(t: { after(fn: () => unknown): void }) {
  const { peer, ca, otherCa } = await broker();
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const secret = (name: string, value: string) => createSecret(gw, admin, name, value);
  const caSecret = await secret('kafka-ca', ca);
  const passwords = { alice: await secret('alice-pw', USERS.alice), wrong: await secret('wrong-pw', WRONG) };
  let n = 0;
  const dataset = (properties: Record<string, unknown>) =>
    createDataset(gw, admin, {
      name: `secured-${++n}`,
      platform: 'kafka',
      properties: { bootstrap_servers: peer.saslSslBootstrapServers, topic: TOPIC, ...properties },
    });
  /** SASL_SSL with the CA from a secret, as `username` with the password secret `password`. */
  const sasl = (
    mechanism: string,
    username = 'alice',
    password = passwords.alice,
    extra: Record<string, unknown> = {},
  ) =>
    dataset({
      security_protocol: 'SASL_SSL',
      ssl_ca_pem: caSecret,
      sasl_mechanism: mechanism,
      sasl_username: username,
      sasl_password: password,
      ...extra,
    });
  const read = (urn: string, extra: Record<string, unknown> = {}) =>
    gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: urn, ...extra } });
  /** The job's refusal; its text holds no certificate or password. */
  const refusal = async (urn: string, extra: Record<string, unknown> = {}) => {
    const res = await read(urn, extra);
    assert.doesNotMatch(res.text, /BEGIN CERTIFICATE|alicePassw0rd|wrongPassw0rd/);
    return {
      status: res.status,
      reason: res.json.detail?.reason,
      problem: res.json.detail?.problem,
      option: res.json.detail?.option,
    };
  };
  const rows = async (urn: string, extra: Record<string, unknown> = {}) =>
    (await createJob(gw, admin, { dataset_urn: urn, ...extra })).inline.data;
  return { gw, peer, ca, otherCa, caSecret, passwords, dataset, sasl, read, refusal, rows };
}

test('kafka over SSL and SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512): rows arrive, offsets commit', async (t) => {
  const w = await world(t);
  const ssl = await w.dataset({
    bootstrap_servers: w.peer.sslBootstrapServers,
    security_protocol: 'SSL',
    ssl_ca_pem: w.caSecret,
  });
  assert.deepEqual(await w.rows(ssl), ROWS);
  // The CA as PEM text in the property, in a bundle after another CA.
  const pemText = await w.dataset({
    bootstrap_servers: w.peer.sslBootstrapServers,
    security_protocol: 'SSL',
    ssl_ca_pem: `${w.otherCa}\n${w.ca}`,
  });
  assert.deepEqual(await w.rows(pemText), ROWS);
  for (const mechanism of ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']) {
    assert.deepEqual(await w.rows(await w.sasl(mechanism)), ROWS, mechanism);
  }
  // A caller's own credentials (both fields) replace the dataset's.
  const bobs = { credential_override: JSON.stringify({ username: 'bob', password: USERS.bob }) };
  assert.deepEqual(await w.rows(await w.sasl('SCRAM-SHA-512', 'alice', w.passwords.wrong), bobs), ROWS);

  // commit_group's Admin client connects with the same TLS and SASL settings.
  const committing = await w.sasl('SCRAM-SHA-256', 'alice', w.passwords.alice, { commit_group: 'secured-readers' });
  assert.deepEqual(await w.rows(committing, { options: { max_messages: 5 } }), ROWS.slice(0, 5));
  const kafkaAdmin = new Admin({ clientId: 'check', bootstrapBrokers: [w.peer.bootstrapServers] });
  t.after(() => kafkaAdmin.close());
  const [committed] = await kafkaAdmin.listConsumerGroupOffsets({ groups: ['secured-readers'] });
  assert.deepEqual(
    committed?.topics.find((x) => x.name === TOPIC)?.partitions.map((p) => p.committedOffset),
    [5n],
  );
});

test(
  'kafka: a wrong password or user is 403 source_auth_failed; another ' +
    'CA, no CA or another name is source_tls_failed',
  async (t) => {
    const w = await world(t);
    const authFailed = {
      status: 403,
      reason: 'source_auth_failed',
      problem: 'sasl authentication failed',
      option: undefined,
    };
    for (const mechanism of ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']) {
      assert.deepEqual(
        await w.refusal(await w.sasl(mechanism, 'alice', w.passwords.wrong)),
        authFailed,
        `${mechanism} wrong password`,
      );
      assert.deepEqual(await w.refusal(await w.sasl(mechanism, 'mallory')), authFailed, `${mechanism} unknown user`);
    }
    // The stored password never goes with a user the caller names: alice's password as "bob" fails.
    const good = await w.sasl('SCRAM-SHA-256');
    assert.deepEqual(
      await w.refusal(good, { credential_override: JSON.stringify({ username: 'bob', password: WRONG }) }),
      authFailed,
    );
    const noPassword = await w.refusal(good, { credential_override: JSON.stringify({ username: 'bob' }) });
    assert.deepEqual([noPassword.status, noPassword.reason], [400, 'source_credentials_missing']);

    const tlsFailed = {
      status: 502,
      reason: 'source_tls_failed',
      problem: 'tls verification failed',
      option: undefined,
    };
    const sslTo = (properties: Record<string, unknown>) =>
      w.dataset({ bootstrap_servers: w.peer.sslBootstrapServers, security_protocol: 'SSL', ...properties });
    assert.deepEqual(await w.refusal(await sslTo({ ssl_ca_pem: w.otherCa })), tlsFailed, 'another CA');
    assert.deepEqual(await w.refusal(await sslTo({})), tlsFailed, "the gateway's default CA store");
    assert.deepEqual(
      await w.refusal(await w.sasl('PLAIN', 'alice', w.passwords.alice, { ssl_ca_pem: w.otherCa })),
      tlsFailed,
      'SASL_SSL',
    );
    // The certificate names localhost only: by IP address the name check fails.
    const byIp = (w.peer.sslBootstrapServers as string).replace('localhost', '127.0.0.1');
    assert.deepEqual(
      await w.refusal(await sslTo({ bootstrap_servers: byIp, ssl_ca_pem: w.ca })),
      tlsFailed,
      'another name',
    );

    // Clear text to a TLS listener, and TLS to the clear-text one.
    const clear = await w.refusal(await w.dataset({ bootstrap_servers: w.peer.sslBootstrapServers }));
    assert.deepEqual([clear.status, clear.reason], [502, 'source_tls_failed']);
    const tlsToClear = await w.refusal(await sslTo({ bootstrap_servers: w.peer.bootstrapServers, ssl_ca_pem: w.ca }));
    assert.deepEqual(
      [tlsToClear.status, tlsToClear.reason, tlsToClear.problem],
      [502, 'source_tls_failed', 'tls handshake failed'],
    );
    const logs = w.gw.logs.join('');
    for (const text of ['BEGIN CERTIFICATE', USERS.alice, WRONG])
      assert.ok(!logs.includes(text), `no ${text} in a log line`);
  },
);

test('kafka security settings: bad values are 422 before any connection; no reader option reaches them', async (t) => {
  const w = await world(t);
  const cases: [Record<string, unknown>, string][] = [
    [{ security_protocol: 'SASL_PLAINTEXT', sasl_mechanism: 'PLAIN' }, 'security_protocol'],
    [{ security_protocol: 'ssl' }, 'security_protocol'],
    [{ security_protocol: 'SASL_SSL', sasl_mechanism: 'GSSAPI' }, 'sasl_mechanism'],
    [{ security_protocol: 'SASL_SSL' }, 'sasl_mechanism'],
    // A password in the properties would be shown to every viewer of the dataset.
    [
      { security_protocol: 'SASL_SSL', sasl_mechanism: 'PLAIN', sasl_username: 'alice', sasl_password: USERS.alice },
      'sasl_password',
    ],
    [{ security_protocol: 'SSL', ssl_ca_pem: 'not a certificate' }, 'ssl_ca_pem'],
    [{ security_protocol: 'SSL', ssl_ca_pem: `${w.ca}\n${w.ca.slice(0, 80)}` }, 'ssl_ca_pem'],
    // Settings the protocol would not use: the owner meant another protocol.
    [{ ssl_ca_pem: w.ca }, 'ssl_ca_pem'],
    [{ security_protocol: 'SSL', sasl_mechanism: 'PLAIN' }, 'sasl_mechanism'],
  ];
  for (const [properties, option] of cases) {
    // Port 1 has no listener: a connection attempt would answer 502, not 422.
    const refused = await w.refusal(await w.dataset({ bootstrap_servers: '127.0.0.1:1', ...properties }));
    assert.deepEqual(
      [refused.status, refused.reason, refused.option],
      [422, 'source_options_invalid', option],
      JSON.stringify(properties),
    );
  }
  const good = await w.sasl('SCRAM-SHA-256');
  for (const options of [
    { security_protocol: 'PLAINTEXT' },
    { ssl_ca_pem: w.otherCa },
    { sasl_mechanism: 'PLAIN' },
    { sasl_username: 'bob' },
    { sasl_password: w.passwords.wrong },
    { bootstrap_servers: w.peer.bootstrapServers },
  ]) {
    const res = await w.read(good, { options });
    assert.deepEqual(
      [res.status, res.json.detail.reason, res.json.detail.key],
      [422, 'option_not_allowed', Object.keys(options)[0]],
    );
  }
  // The override carries credentials only: no broker or protocol of the caller's.
  const retarget = await w.read(good, {
    credential_override: JSON.stringify({ username: 'bob', bootstrap_servers: '127.0.0.1:1' }),
  });
  assert.deepEqual([retarget.status, retarget.json.detail.reason], [422, 'option_not_allowed']);
});
