/**
 * The renewal loop of a PostgreSQL cluster (gateway/tls/acme/renewal.ts, cluster-outcome.ts, cluster.ts) on a real
 * database, nodes in this process (each its own connection, data dir and sealed identity), the CA's part played by
 * sessions that hand back certificates the test issues:
 *
 * - a pull while the ordering node finishes its order (another file published, a worker starting on the same data
 *   dir) never writes the database's older certificate back: what the database ends with is the new certificate and
 *   the status naming it, and the node's own files are the same;
 * - the order lock lost mid-order (the node's database session ended, as the bridge then reconnects): nothing of the
 *   order is published, the loss is logged once, and another node may order; an outcome in hand by then is
 *   published later under the lock — or dropped for what another node published meanwhile.
 */
import assert from 'node:assert/strict';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { pino } from 'pino';
import { ClusterIdentity } from '../../../../../gateway/cluster/identity.ts';
import type { SqlConnection } from '../../../../../gateway/db/connection.ts';
import { openConfiguredDatabase } from '../../../../../gateway/db/open.ts';
import {
  ACME_PREFIX,
  type AcmeCluster,
  acmeClusterOf,
  OrderLockLost,
} from '../../../../../gateway/tls/acme/cluster.ts';
import type { AcmeSession } from '../../../../../gateway/tls/acme/order.ts';
import { RenewalLoop } from '../../../../../gateway/tls/acme/renewal.ts';
import { AcmeStore, NO_STATUS } from '../../../../../gateway/tls/acme/store.ts';
import { issueCa, issueServerCertificate } from '../../../../../gateway/tls/issue.ts';
import type { ServerKeyPair } from '../../../../../gateway/tls/serving-certificate.ts';
import { freshPostgresDatabase } from '../../../../helpers/engine.ts';
import { waitFor } from '../../../../helpers/wait.ts';

const NAME = 'gw.meshgate.test';
const DIRECTORY = 'https://ca.meshgate.test/directory';

interface Node {
  readonly sql: SqlConnection;
  readonly dataDir: string;
  readonly identity: ClusterIdentity;
  readonly cluster: AcmeCluster;
  readonly store: AcmeStore;
  readonly logs: Record<string, unknown>[];
  readonly logger: pino.Logger;
}

async function cluster(t: TestContext) {
  const url = await freshPostgresDatabase();
  const key = randomBytes(32);
  const open = async (nodeId: string, dataDir = mkdtempSync(join(tmpdir(), 'meshgate-acme-renewal-'))) => {
    const { sql } = await openConfiguredDatabase({ dataDir: '', database: url });
    t.after(() => {
      sql.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const identity = new ClusterIdentity(sql, key, [{ name: 'tls', dir: join(dataDir, 'tls') }], [ACME_PREFIX]);
    const logs: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    const acme = acmeClusterOf(sql, identity, nodeId, 60_000);
    return { sql, dataDir, identity, cluster: acme, store: new AcmeStore(dataDir), logs, logger } satisfies Node;
  };
  const ca = await issueCa('acme-renewal-test', new Date());
  const issue = () => issueServerCertificate(ca, [NAME], new Date());
  return { open, issue, key };
}

const serialOf = (pem: string | null) => (pem === null ? null : new X509Certificate(pem).serialNumber);
const logged = (node: Node, msg: RegExp) => node.logs.filter((line) => msg.test(String(line.msg)));

/** The node holds `pair` and a status that made it due, both published (as an earlier order of its left them). */
function seed(node: Node, pair: ServerKeyPair): void {
  node.store.saveCertificate(pair, DIRECTORY);
  const serial = serialOf(pair.certPem);
  const due = new Date(Date.now() - 1000).toISOString();
  node.store.saveStatus({ ...NO_STATUS, names: [NAME], directoryUrl: DIRECTORY, serial, nextRenewal: due });
  assert.equal(node.cluster.tryLock(), true);
  node.cluster.publish();
  node.cluster.unlock();
}

function loopOf(node: Node, session: Partial<AcmeSession>, options: { retryMinMs?: number; lockCheckMs?: number }) {
  const served: string[] = [];
  const loop = new RenewalLoop({
    names: [NAME],
    directoryUrl: DIRECTORY,
    store: node.store,
    session: async () => ({ renewalWindow: async () => null, ...session }) as AcmeSession,
    retryMinMs: options.retryMinMs ?? 60_000,
    orderDeadlineMs: 60_000,
    lockCheckMs: options.lockCheckMs ?? 60_000,
    logger: node.logger,
    now: () => new Date(),
    onIssued: (pair) => void served.push(serialOf(pair.certPem) as string),
    onFailure: () => {},
    cluster: node.cluster,
  });
  return { loop, served };
}

/** What the database holds of the ACME folder: the certificate's serial, and the serial the status names. */
function published(node: Node): { certificate: string | null; status: string | null } {
  const status = node.cluster.peek('status.json');
  return {
    certificate: serialOf(node.cluster.peek('certificate.pem')),
    status: status === null ? null : (JSON.parse(status) as { serial: string | null }).serial,
  };
}

/** Ends the node's database session from another connection, as a server restart or a failover would. */
async function endSession(node: Node, from: Node): Promise<void> {
  const pid = node.sql.prepare('SELECT pg_backend_pid()').pluck().get();
  from.sql.prepare('SELECT pg_terminate_backend(?)').get(pid);
  await waitFor(() => !from.sql.prepare('SELECT 1 FROM pg_stat_activity WHERE pid = ?').get(pid), {
    what: 'the session ended',
  });
}

test('a pull while the order finishes never puts the older certificate back', async (t) => {
  const { open, issue, key } = await cluster(t);
  const a = await open('node-a');
  // A worker of node A: its own identity on the same data dir, as a worker process has.
  const worker = new ClusterIdentity(a.sql, key, [{ name: 'tls', dir: join(a.dataDir, 'tls') }], [ACME_PREFIX]);
  const [first, renewed] = [await issue(), await issue()];
  seed(a, first);
  const { loop, served } = loopOf(
    a,
    {
      order: async () => renewed,
      async renewalWindow() {
        // Between the certificate written and the status set: a file another node published (the identity's own
        // subscriber pulls), and a worker starting.
        a.identity.pull();
        worker.begin();
        worker.end(true);
        return null;
      },
    },
    {},
  );
  t.after(() => loop.close());
  loop.start();
  const serial = serialOf(renewed.certPem);
  await waitFor(() => published(a).status === serial, { what: 'the renewed status published' });
  assert.deepEqual(published(a), { certificate: serial, status: serial });
  assert.equal(serialOf(readFileSync(join(a.store.dir, 'certificate.pem'), 'utf8')), serial, 'node A keeps it');
  assert.equal(readFileSync(join(a.store.dir, 'certificate-key.pem'), 'utf8'), renewed.keyPem, 'and its key');
  assert.deepEqual(served, [serial]);
  // The pulls after it leave it too.
  a.identity.pull();
  assert.equal(serialOf(readFileSync(join(a.store.dir, 'certificate.pem'), 'utf8')), serial);
});

test('a session that lost the order lock publishes nothing; another node may order', async (t) => {
  const { open, issue } = await cluster(t);
  const [a, b] = [await open('node-a'), await open('node-b')];
  seed(a, await issue());
  const before = published(a);
  assert.equal(a.cluster.tryLock(), true);
  await endSession(a, b);
  assert.equal(a.cluster.holdsLock(), false);
  a.store.saveCertificate(await issue(), DIRECTORY);
  assert.throws(() => a.cluster.publish(), OrderLockLost);
  assert.deepEqual(published(a), before, 'nothing published');
  assert.equal(b.cluster.tryLock(), true, 'the lock is free for another node');
  assert.equal(b.cluster.holdsLock(), true);
});

test('an order whose lock is lost is abandoned: logged once, nothing published, no backoff', async (t) => {
  const { open, issue } = await cluster(t);
  const [a, b] = [await open('node-a'), await open('node-b')];
  seed(a, await issue());
  const before = published(a);
  const late = await issue();
  let leftBehind: Promise<void> = Promise.resolve();
  const { loop } = loopOf(
    a,
    {
      order: (_names, _replaces, signal) => {
        const order = (async () => {
          await endSession(a, b);
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          return late; // the CA's answer arrives after all: left behind
        })();
        leftBehind = order.then(() => undefined);
        return order;
      },
    },
    { lockCheckMs: 50 },
  );
  t.after(() => loop.close());
  loop.start();
  await waitFor(() => logged(a, /order lock was lost/).length > 0, { what: 'the lost lock logged' });
  await leftBehind;
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(published(a), before, 'nothing of the order published');
  assert.equal(logged(a, /order lock was lost/).length, 1, 'logged once');
  assert.equal(logged(a, /ACME order failed/).length, 0, 'not a failure of the CA');
  assert.equal(a.store.status().failures, 0);
  assert.equal(b.cluster.tryLock(), true, 'another node may order');
});

test('an outcome in hand when the lock was lost is published again under the lock', async (t) => {
  const { open, issue } = await cluster(t);
  const [a, b] = [await open('node-a'), await open('node-b')];
  seed(a, await issue());
  const renewed = await issue();
  const { loop } = loopOf(
    a,
    {
      order: async () => {
        await endSession(a, b); // the database went away and came back: a new session, without the lock
        return renewed;
      },
    },
    { retryMinMs: 200 },
  );
  t.after(() => loop.close());
  loop.start();
  const serial = serialOf(renewed.certPem);
  await waitFor(() => published(a).status === serial, { what: 'the outcome published again' });
  assert.deepEqual(published(a), { certificate: serial, status: serial });
  assert.equal(logged(a, /ACME state published to the other nodes/).length, 1);
  assert.equal(b.cluster.tryLock(), true, 'the lock released after');
});

test('an unpublished outcome gives way to what another node published meanwhile', async (t) => {
  const { open, issue } = await cluster(t);
  const [a, b] = [await open('node-a'), await open('node-b')];
  seed(a, await issue());
  const [mine, theirs] = [await issue(), await issue()];
  const { loop, served } = loopOf(
    a,
    {
      order: async () => {
        await endSession(a, b);
        // Node B takes the free lock, orders and publishes while node A's outcome is still unpublished.
        b.identity.pullUnder(ACME_PREFIX);
        b.store.saveCertificate(theirs, DIRECTORY);
        b.store.saveStatus({ ...b.store.status(), serial: serialOf(theirs.certPem) });
        assert.equal(b.cluster.tryLock(), true);
        b.cluster.publish();
        b.cluster.unlock();
        return mine;
      },
    },
    { retryMinMs: 200 },
  );
  t.after(() => loop.close());
  loop.start();
  const serial = serialOf(theirs.certPem);
  await waitFor(() => served.includes(serial as string), { what: "node B's certificate served by node A" });
  assert.deepEqual(published(a), { certificate: serial, status: serial }, "node B's outcome stays");
  assert.equal(serialOf(readFileSync(join(a.store.dir, 'certificate.pem'), 'utf8')), serial);
  assert.equal(logged(a, /another node published its ACME state meanwhile/).length, 1);
});
