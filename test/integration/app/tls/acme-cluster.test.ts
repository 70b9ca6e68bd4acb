/**
 * ACME on a cluster: nodes (the gateway as it ships, test/helpers/workers.ts serve) with their own data dirs on one
 * PostgreSQL database, against Pebble (test/helpers/peers/pebble.ts), which validates every challenge against node
 * A's ports (node A: a primary and two workers). The test holds the cluster's order lock while both start; node A
 * (its retry a day away) tries once and leaves the order to the lock's holder, then the lock goes to node B: B
 * orders, A answers B's HTTP-01 challenge through the shared challenges, and both serve the one certificate issued.
 * A node joining later with an empty data dir serves it from the database and orders nothing; the renewal happens
 * once for the cluster.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { openPostgres } from '../../../../gateway/db/postgres/open.ts';
import { shippedFiles } from '../../../../gateway/shipped.ts';
import { ACME_ORDER_LOCK } from '../../../../gateway/tls/acme/cluster.ts';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { freshPostgresDatabase, testNodeKeyFile } from '../../../helpers/engine.ts';
import { startPebble } from '../../../helpers/peers/pebble.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { freePort, type Served, serve } from '../../../helpers/workers.ts';

const NAMES = ['gw.meshgate.test', 'www.meshgate.test'];
const ISSUED = /"msg":"ACME certificate issued"/g;
const BEGUN = /"msg":"ACME order begun"/g;
const LEFT = /"msg":"ACME order left to the node holding the cluster order lock"/;
const ADOPTED = /"msg":"ACME certificate another node obtained is served"/;

function served(port: number, servername: string, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['http/1.1'] }, () => {
      resolve(new X509Certificate(socket.getPeerCertificate().raw));
      socket.end();
    });
    socket.once('error', reject);
  });
}

const count = (text: string, pattern: RegExp) => text.match(pattern)?.length ?? 0;

test('two PostgreSQL nodes order one certificate, answer each other’s challenge, serve it; renewed once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-acme-cluster-'));
  const started: Served[] = [];
  t.after(async () => {
    for (const gateway of started) await gateway.killTree();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  const database = await freshPostgresDatabase();
  const nodeKeyFile = testNodeKeyFile();
  const ports = {
    a: { tls: await freePort(), http: await freePort() },
    b: { tls: await freePort(), http: await freePort() },
    c: { tls: await freePort(), http: await freePort() },
  };
  // Pebble validates against node A only: B's challenge passes only if A answers it.
  const pebble = await startPebble(t, { httpPort: ports.a.http, tlsPort: ports.a.tls, shortLivedSeconds: 90 });
  const start = async (node: keyof typeof ports, retryMinSeconds: number) => {
    const configFile = join(dir, `${node}.json`);
    const acme = {
      directoryUrl: pebble.directoryUrl,
      directoryCaFile: pebble.directoryCaFile,
      names: [NAMES[1]],
      challenges: ['http-01'],
      httpPort: ports[node].http,
      profile: 'shortlived',
      retryMinSeconds,
    };
    writeFileSync(configFile, JSON.stringify({ tls: { acme } }));
    const args = ['--https-port', String(ports[node].tls), '--bind', '127.0.0.1', '--hostname', NAMES[0] as string];
    // Node A runs a primary and two workers: the primary answers on the feed, its workers serve what it hands them.
    if (node === 'a') args.push('--workers', '2');
    const gateway = await serve(join(dir, node), [...args, '--log-level', 'info'], {
      PLATFORM_CONFIG_FILE: configFile,
      PLATFORM_DATABASE_URL: database,
      PLATFORM_NODE_KEY_FILE: nodeKeyFile,
      PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: 'acme-cluster-admin-pw',
    });
    started.push(gateway);
    return { gateway, configFile, dataDir: join(dir, node) };
  };

  // The test holds the order lock while the nodes start, so which node orders is decided, not raced.
  const holder = await openPostgres(database, shippedFiles().pgMigrationsFolder);
  t.after(() => holder.close());
  holder.prepare('SELECT pg_advisory_lock(hashtext(?))').get(ACME_ORDER_LOCK);
  const b = await start('b', 1);
  await b.gateway.waitForLine(LEFT);
  const a = await start('a', 86_400);
  await a.gateway.waitForLine(LEFT);
  holder.prepare('SELECT pg_advisory_unlock(hashtext(?))').get(ACME_ORDER_LOCK);

  await b.gateway.waitForLine(ISSUED);
  await a.gateway.waitForLine(ADOPTED);
  const root = await pebble.issuingRoot();
  const fromB = await served(ports.b.tls, NAMES[0] as string, root);
  const fromA = await served(ports.a.tls, NAMES[1] as string, root);
  assert.equal(fromA.serialNumber, fromB.serialNumber, 'both nodes serve the one certificate');
  assert.deepEqual(fromA.subjectAltName?.split(', ').sort(), NAMES.map((n) => `DNS:${n}`).sort());
  assert.equal(count(a.gateway.output(), BEGUN), 0, 'node A ordered nothing');
  assert.equal(count(b.gateway.output(), BEGUN), 1, 'node B ordered once');
  assert.equal(count(a.gateway.output() + b.gateway.output(), ISSUED), 1, 'one certificate issued');

  // A node joining with an empty data dir serves the stored certificate from its first handshake, orders nothing.
  const c = await start('c', 1);
  assert.equal((await served(ports.c.tls, NAMES[0] as string, root)).serialNumber, fromA.serialNumber);
  const statusArgs = [
    'cert',
    'status',
    '--config',
    c.configFile,
    '--data-dir',
    c.dataDir,
    '--hostname',
    NAMES[0] as string,
  ];
  const status = await execMeshgate(statusArgs, {
    PLATFORM_DATABASE_URL: database,
    PLATFORM_NODE_KEY_FILE: nodeKeyFile,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  assert.match(status.stdout, new RegExp(`^serial: ${fromA.serialNumber}$`, 'm'));
  assert.match(status.stdout, /^next renewal: \d{4}-/m);

  // The renewal (two thirds of 90 s): one node orders it, every node serves it.
  await waitFor(() => count([a, b, c].map((n) => n.gateway.output()).join(''), ISSUED) >= 2, {
    timeoutMs: 90_000,
    what: 'the renewal',
  });
  const renewedRoot = await pebble.issuingRoot();
  await waitFor(
    async () => {
      const serials = await Promise.all(
        [ports.a, ports.b, ports.c].map(
          async (p) => (await served(p.tls, NAMES[0] as string, renewedRoot)).serialNumber,
        ),
      );
      return serials.every((s) => s !== fromA.serialNumber && s === serials[0]);
    },
    { what: 'every node serving the renewed certificate' },
  );
  // Each certificate is renewed by one order in the whole cluster (a short-lived one may be renewed again since, and
  // that order may still be under way: each order begun is waited for until it has issued).
  const begun = (text: string) =>
    text
      .split('\n')
      .filter((line) => line.includes('"msg":"ACME order begun"'))
      .map((line) => JSON.parse(line).replaces as string | null);
  let outputs = '';
  await waitFor(
    () => {
      outputs = [a, b, c].map((n) => n.gateway.output()).join('\n');
      return count(outputs, ISSUED) >= begun(outputs).length;
    },
    { what: 'every order begun to issue' },
  );
  const replaced = begun(outputs);
  assert.equal(replaced.filter((serial) => serial === null).length, 1, 'one first order');
  assert.ok(replaced.includes(fromA.serialNumber), 'the first certificate was renewed');
  assert.equal(new Set(replaced).size, replaced.length, `one order per certificate renewed: ${replaced.join(', ')}`);
  assert.equal(count(outputs, ISSUED), replaced.length, 'every order issued once');
  assert.ok(!outputs.includes('PRIVATE KEY'), 'no key in any log');
});
