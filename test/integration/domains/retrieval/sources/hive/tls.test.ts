/**
 * The Hive source against a real HiveServer2 whose Thrift ports speak TLS
 * only (startHive with `tls`: `hive.server2.use.SSL`), binary and HTTP
 * (HTTPS at /cliservice), its certificate for `localhost` alone from a test
 * CA (the gateway's own trust material code), and passwords checked (CUSTOM
 * authentication). Rows arrive over either transport with the CA from a
 * secret or as PEM text; a certificate from another CA, none to verify
 * against, or another name is 502 `source_tls_failed`; a wrong password
 * inside TLS is 403 `source_auth_failed`; bad settings are 422 before any
 * connection.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureTlsMaterial } from '../../../../../../gateway/tls/material.ts';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { csvTable, startHive } from '../../../../../helpers/peers/hive.ts';
import { createDataset, createJob, createSecret } from '../../../../../helpers/retrieval.ts';
import { sharedPeer } from '../../../../../helpers/retrieval-sources.ts';

const ROWS = Array.from({ length: 8 }, (_, i) => ({ id: i + 1, name: `n${i + 1}` }));
const PASSWORD = 'Tls-Right-Passw0rd';
const TRANSPORTS = ['binary', 'http'] as const;

/** One TLS HiveServer2 for the file, with a table `items` of ROWS. */
const server = sharedPeer(async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-hivetls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tls = await ensureTlsMaterial({ tlsDir: join(dir, 'ca'), names: ['localhost'], clusterName: 'hive-test' });
  const other = await ensureTlsMaterial({
    tlsDir: join(dir, 'other'),
    names: ['localhost'],
    clusterName: 'hive-other',
  });
  const peer = await startHive(t, { tls, users: { ann: PASSWORD }, http: true });
  await csvTable(
    peer,
    'items',
    'id INT, name STRING',
    ROWS.map((r) => `${r.id},${r.name}`),
  );
  return { peer, ca: tls.caPem, otherCa: other.caPem };
});

async function world(t: { after(fn: () => unknown): void }) {
  const { peer, ca, otherCa } = await server();
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const secret = (name: string, value: string) => createSecret(gw, admin, name, value);
  const user = await secret('hive-ann', JSON.stringify({ user: 'ann', password: PASSWORD }));
  let n = 0;
  /** A dataset on `items` as `ann`, over TLS to localhost by `transport`, unless `properties` say otherwise. */
  const dataset = (properties: Record<string, unknown>, transport: 'binary' | 'http' = 'binary') =>
    createDataset(gw, admin, {
      name: `default.items-${++n}`,
      platform: 'hive',
      properties: {
        host: 'localhost',
        ...(transport === 'http' ? { transport, port: peer.httpPort } : { port: peer.port }),
        table: 'items',
        ssl: true,
        auth: 'PLAIN',
        secret_urn: user,
        ...properties,
      },
    });
  const read = (urn: string, extra: Record<string, unknown> = {}) =>
    gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: urn, ...extra } });
  /** The job's refusal; its text holds no certificate. */
  const refusal = async (urn: string, extra: Record<string, unknown> = {}) => {
    const res = await read(urn, extra);
    assert.doesNotMatch(res.text, /BEGIN CERTIFICATE/);
    assert.ok(!res.text.includes(PASSWORD), 'no password in the answer');
    return {
      status: res.status,
      reason: res.json.detail?.reason,
      problem: res.json.detail?.problem,
      option: res.json.detail?.option,
    };
  };
  const rows = async (urn: string) => (await createJob(gw, admin, { dataset_urn: urn })).inline.data;
  return { gw, peer, ca, otherCa, secret, dataset, read, refusal, rows };
}

for (const transport of TRANSPORTS) {
  const name = `hiveserver2 over TLS (${transport}): rows with a CA as secret or PEM; chain, name, password checked`;
  test(name, async (t) => {
    const w = await world(t);
    const dataset = (properties: Record<string, unknown>) => w.dataset(properties, transport);
    assert.deepEqual(await w.rows(await dataset({ ssl_ca_pem: await w.secret('hive-ca', w.ca) })), ROWS);
    assert.deepEqual(await w.rows(await dataset({ ssl_ca_pem: `${w.otherCa}\n${w.ca}` })), ROWS, 'a bundle');
    // Inside TLS the password is still checked.
    const wrong = await w.secret('hive-wrong', JSON.stringify({ user: 'ann', password: 'not-the-password' }));
    const refused = await w.refusal(await dataset({ ssl_ca_pem: w.ca, secret_urn: wrong }));
    assert.deepEqual([refused.status, refused.reason], [403, 'source_auth_failed'], 'a wrong password');

    const tlsFailed = {
      status: 502,
      reason: 'source_tls_failed',
      problem: 'tls verification failed',
      option: undefined,
    };
    assert.deepEqual(await w.refusal(await dataset({ ssl_ca_pem: w.otherCa })), tlsFailed, 'another CA');
    assert.deepEqual(await w.refusal(await dataset({})), tlsFailed, "the gateway's default CA store");
    // The certificate names localhost only: by IP address the name check fails.
    assert.deepEqual(
      await w.refusal(await dataset({ host: '127.0.0.1', ssl_ca_pem: w.ca })),
      tlsFailed,
      'another name',
    );
    // Clear text to the TLS port gets no rows.
    const clear = await w.refusal(await dataset({ ssl: false }));
    assert.equal(clear.status, 502);
    const logs = w.gw.logs.join('');
    assert.ok(!logs.includes('BEGIN CERTIFICATE'), 'no certificate text in a log line');
    assert.ok(!logs.includes(PASSWORD) && !logs.includes('not-the-password'), 'no password in a log line');
  });
}

test(
  'hive TLS settings: bad values are 422 before any connection; no ' + 'reader option or override reaches them',
  async (t) => {
    const w = await world(t);
    const cases: [Record<string, unknown>, string][] = [
      [{ ssl: 'yes' }, 'ssl'],
      [{ ssl_ca_pem: 'not a certificate' }, 'ssl_ca_pem'],
      [{ ssl_ca_pem: `${w.ca}\n${w.ca.slice(0, 80)}` }, 'ssl_ca_pem'],
      [{ ssl: false, ssl_ca_pem: w.ca }, 'ssl_ca_pem'],
    ];
    for (const [properties, option] of cases) {
      // Port 1 has no listener: a connection attempt would answer 502, not 422.
      const refused = await w.refusal(await w.dataset({ port: 1, ...properties }));
      assert.deepEqual(
        [refused.status, refused.reason, refused.option],
        [422, 'source_options_invalid', option],
        JSON.stringify(properties),
      );
    }
    const good = await w.dataset({ ssl_ca_pem: w.ca }, 'http');
    for (const options of [{ ssl: false }, { ssl_ca_pem: w.otherCa }, { transport: 'binary' }]) {
      const res = await w.read(good, { options });
      assert.deepEqual(
        [res.status, res.json.detail.reason, res.json.detail.key],
        [422, 'option_not_allowed', Object.keys(options)[0]],
      );
    }
    const override = await w.read(good, {
      credential_override: JSON.stringify({ user: 'ann', password: 'pw', ssl: false }),
    });
    assert.deepEqual(
      [override.status, override.json.detail.reason, override.json.detail.key],
      [422, 'option_not_allowed', 'ssl'],
    );
  },
);
