/**
 * The ACME part of a PostgreSQL cluster (gateway/tls/acme/cluster.ts) on a real database, two nodes in this process
 * (each its own connection, data dir and sealed identity): the order lock is held by one node at a time; a challenge
 * the ordering node presents is answered by the other node once it took the published list, and the CA is told to
 * validate only after that node's receipt; a listed name the node does not order, or a list that does not parse, is
 * never answered; a live node that never confirms holds the order only for the bound, and is named.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
  CHALLENGES_FILE,
  OrderLockLost,
  SharedChallenges,
} from '../../../../../gateway/tls/acme/cluster.ts';
import type { PendingChallenge } from '../../../../../gateway/tls/acme/order.ts';
import { freshPostgresDatabase } from '../../../../helpers/engine.ts';

const NAME = 'gw.meshgate.test';
const TOKEN = 'evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA';

interface Node {
  readonly cluster: AcmeCluster;
  readonly sql: SqlConnection;
  readonly dir: string;
  readonly answered: Map<string, string>;
  readonly logs: Record<string, unknown>[];
  shared(names: readonly string[], receiptsWithinMs?: number): SharedChallenges;
}

async function twoNodes(t: TestContext): Promise<[Node, Node]> {
  const url = await freshPostgresDatabase();
  const key = randomBytes(32);
  const open = async (nodeId: string): Promise<Node> => {
    const { sql } = await openConfiguredDatabase({ dataDir: '', database: url });
    const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-acme-cluster-'));
    t.after(() => {
      sql.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const identity = new ClusterIdentity(sql, key, [{ name: 'tls', dir: join(dataDir, 'tls') }], [ACME_PREFIX]);
    const cluster = acmeClusterOf(sql, identity, nodeId, 60_000);
    sql.prepare('INSERT INTO cluster_nodes (node_id, url, heartbeat_at) VALUES (?, ?, ?)').run(nodeId, url, Date.now());
    const answered = new Map<string, string>();
    const logs: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    const dir = join(dataDir, 'tls', 'acme');
    const local = {
      async present(challenge: PendingChallenge) {
        answered.set(challenge.name, challenge.type === 'http-01' ? challenge.token : challenge.keyAuthorization);
      },
      async withdraw(challenge: PendingChallenge) {
        answered.delete(challenge.name);
      },
    };
    const shared = (names: readonly string[], receiptsWithinMs = 30_000) =>
      new SharedChallenges({
        dir,
        cluster,
        local,
        names,
        logger,
        receiptsWithinMs,
        alpnChallenge: async ({ name, keyAuthorization }) => ({
          type: 'tls-alpn-01',
          name,
          keyAuthorization,
          pair: { certPem: '', keyPem: '' },
        }),
      });
    return { cluster, sql, dir, answered, logs, shared };
  };
  return [await open('node-a'), await open('node-b')];
}

const http01 = (name: string, token = TOKEN): PendingChallenge => ({
  type: 'http-01',
  name,
  token,
  keyAuthorization: `${token}.thumbprint`,
});

test('one node holds the order lock at a time', async (t) => {
  const [a, b] = await twoNodes(t);
  assert.equal(a.cluster.tryLock(), true);
  assert.equal(b.cluster.tryLock(), false, 'held by the other node');
  a.cluster.unlock();
  assert.equal(b.cluster.tryLock(), true);
  assert.equal(a.cluster.tryLock(), false);
  b.cluster.unlock();
});

test('the other node answers a published challenge before the CA is told; names not ordered never', async (t) => {
  const [a, b] = await twoNodes(t);
  const [ordering, following] = [a.shared([NAME, 'evil.meshgate.test']), b.shared([NAME])];
  assert.equal(a.cluster.tryLock(), true, 'node A orders: it publishes challenges under the lock');
  let presented = false;
  const presenting = ordering.present(http01(NAME)).then(() => {
    presented = true;
  });
  // What the change feed does on node B: take the files, answer what is listed, publish the receipt.
  for (let i = 0; i < 100 && b.answered.size === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    b.cluster.pull();
    await following.sync();
  }
  assert.equal(b.answered.get(NAME), TOKEN, 'node B answers the token node A presented');
  await presenting;
  assert.equal(presented, true, 'node A went on once node B confirmed');
  assert.deepEqual(
    a.logs.filter((line) => line.msg !== undefined && String(line.msg).includes('did not confirm')),
    [],
  );

  // A name node B does not order, presented by node A: node B never answers it.
  await Promise.all([
    ordering.present(http01('evil.meshgate.test', 'Zm9yZWlnbi10b2tlbi1mb3ItYW5vdGhlci1uYW1lLTAx')),
    (async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      b.cluster.pull();
      await following.sync();
    })(),
  ]);
  assert.equal(b.answered.has('evil.meshgate.test'), false);
  assert.equal(b.answered.get(NAME), TOKEN);

  // Withdrawn on node A: node B stops answering at its next sync.
  await ordering.withdraw(http01(NAME));
  b.cluster.pull();
  await following.sync();
  assert.equal(b.answered.has(NAME), false);

  // Presented again and answered; then a list that does not parse (as a node with a bug would publish it): node B
  // answers nothing of it, withdraws what it answered, and says so.
  await Promise.all([
    ordering.present(http01(NAME)),
    (async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      b.cluster.pull();
      await following.sync();
    })(),
  ]);
  assert.equal(b.answered.get(NAME), TOKEN);
  writeFileSync(join(a.dir, CHALLENGES_FILE), '{"not":"a list"}\n');
  a.cluster.publish([CHALLENGES_FILE]);
  await following.sync();
  assert.equal(b.answered.size, 0);
  assert.ok(b.logs.some((line) => line.msg === 'ACME: the shared challenges do not parse; none answered'));
});

test('a live node that never confirms holds the validation only for the bound, and is named', async (t) => {
  const [a] = await twoNodes(t);
  assert.equal(a.cluster.tryLock(), true);
  await a.shared([NAME], 300).present(http01(NAME));
  const warning = a.logs.find(
    (line) => line.msg === 'ACME: nodes did not confirm the pending challenges; the CA validates anyway',
  );
  assert.deepEqual(warning?.nodes, ['node-b']);
});

test('an abandoned order publishes no challenge over the next order’s, and clears its own while it may', async (t) => {
  const [a, b] = await twoNodes(t);
  const [first, next] = [a.shared([NAME], 50), b.shared([NAME], 50)];
  const listed = () =>
    JSON.stringify((JSON.parse(a.cluster.peek(CHALLENGES_FILE) ?? '[]') as { token: string }[]).map((e) => e.token));
  const order = new AbortController();
  assert.equal(a.cluster.tryLock(), true);
  const abandoned = http01(NAME);
  await first.present(abandoned, order.signal);
  assert.equal(listed(), JSON.stringify([TOKEN]));
  // The deadline passes (the lock is released after): the list is cleared while it is still node A's.
  order.abort(new Error('no certificate within 600 s'));
  assert.equal(listed(), '[]');
  a.cluster.unlock();
  // Node B orders next; node A's abandoned order goes on a step and ends: nothing of it is published.
  assert.equal(b.cluster.tryLock(), true);
  const nextToken = 'bmV4dC1vcmRlci10b2tlbi1mcm9tLW5vZGUtYi0wMDAwMDAwMDAwMDAwMDAwMDA';
  await next.present(http01(NAME, nextToken));
  await first.withdraw(abandoned, order.signal);
  const late = http01(NAME, 'bGF0ZS1wcmVzZW50LW9mLWFuLWFiYW5kb25lZC1vcmRlci0wMDAwMDAwMDAwMDA');
  await assert.rejects(first.present(late, order.signal), /no certificate within/);
  assert.equal(listed(), JSON.stringify([nextToken]), "node B's list stands");
  assert.equal(a.answered.has(NAME), false, 'node A answers nothing of its abandoned order');
  b.cluster.unlock();
});

test('a present that fails after answering locally stops answering; without the lock none is', async (t) => {
  const [a, b] = await twoNodes(t);
  const shared = a.shared([NAME], 50);
  // Not holding the lock: refused before anything is answered or published.
  await assert.rejects(shared.present(http01(NAME)), OrderLockLost);
  assert.equal(a.answered.size, 0);
  assert.equal(a.cluster.peek(CHALLENGES_FILE), null);
  // The lock lost while the challenge was being answered locally: the answer is withdrawn, nothing published.
  assert.equal(a.cluster.tryLock(), true);
  const pid = a.sql.prepare('SELECT pg_backend_pid()').pluck().get();
  const presenting = shared.present(http01(NAME));
  b.sql.prepare('SELECT pg_terminate_backend(?)').get(pid);
  await assert.rejects(presenting);
  assert.equal(a.answered.size, 0, 'the local answer is withdrawn');
  assert.equal(b.cluster.peek(CHALLENGES_FILE), null, 'nothing published');
});
