/**
 * Declared federation under pressure, against real gateways: two applies at once leave one live record per peer (the
 * database refuses the second, and the apply that lost says so by name); a dry run plans the same whatever PSK it is
 * given, so it cannot be asked whether a guess is the stored one; two applies pairing one record report it paired,
 * not failed; and `meshgate federation apply` sends no secret over plain http but to a loopback host.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { federations } from '../../../../domains/federation/schema.ts';
import { eq } from '../../../../gateway/db/drizzle.ts';
import { runMeshgate } from '../../../helpers/cli.ts';
import { newPsk, SHARED_ISSUER, startPeer } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';

interface Outcome {
  name: string;
  action: string;
  outcome: string;
  federation_id: string | null;
  status: string | null;
  reason?: string;
  psk?: string;
}

async function applyPeers(gw: TestGateway, peers: unknown[], dryRun = false) {
  const res = await gw.request('POST', '/api/cluster/federations/apply', {
    token: await gw.adminToken(),
    json: { dry_run: dryRun, peers },
  });
  assert.equal(res.status, 200, res.text);
  return res.json as { dry_run: boolean; peers: Outcome[] };
}

async function records(gw: TestGateway) {
  const res = await gw.request('GET', '/api/cluster/federations?limit=1000', { token: await gw.adminToken() });
  assert.equal(res.status, 200, res.text);
  return res.json as { id: string; declared_as: string | null; status: string }[];
}

const receiver = (name: string, psk: string) => ({
  name,
  role: 'receiver',
  preshared_key: psk,
  shared_issuer_url: SHARED_ISSUER,
});

/** A peer address that accepts connections and never answers: a pair call to it waits out the peer timeout. */
async function silentPeer(t: { after(fn: () => Promise<void>): void }): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as { port: number }).port;
}

test('two applies at once: one live record per peer, and the apply that lost names the conflict', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const port = await silentPeer(t);
  // Each apply waits on the silent peer's pair first, so both have read the records before either makes fed-x.
  const peers = [
    {
      name: 'fed-silent',
      role: 'initiator',
      address: `127.0.0.1:${port}`,
      hostname: 'fed-silent.test',
      preshared_key: newPsk(),
      shared_issuer_url: SHARED_ISSUER,
    },
    receiver('fed-x', newPsk()),
  ];
  const [first, second] = await Promise.all([applyPeers(a, peers), applyPeers(a, peers)]);
  const live = (await records(a)).filter((r) => r.status !== 'DISCONNECTED' && r.status !== 'DELETED');
  for (const name of ['fed-silent', 'fed-x']) {
    assert.equal(live.filter((r) => r.declared_as === name).length, 1, `${name}: ${JSON.stringify(live)}`);
  }
  const x = [first, second].map((run) => run.peers.find((o) => o.name === 'fed-x') as Outcome);
  const won = x.find((o) => o.outcome === 'waiting');
  const lost = x.find((o) => o.outcome === 'failed');
  assert.ok(won && lost, `one apply made fed-x, the other was refused: ${JSON.stringify(x)}`);
  assert.equal(lost.reason, 'federation_declared_exists');
  assert.equal(lost.federation_id, won.federation_id, "the refused apply names the winner's record");
  assert.equal(lost.status, 'WAITING');

  const again = await applyPeers(a, peers.slice(1));
  assert.deepEqual(
    again.peers.map((o) => [o.name, o.action, o.outcome]),
    [
      ['fed-x', 'keep', 'unchanged'],
      ['fed-silent', 'disconnect', 'disconnected'],
    ],
    'an apply after the race converges',
  );
});

test('two applies pairing one PAIRING record: one pairs it, the other reports it paired by that apply', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const port = await silentPeer(t);
  const psk = newPsk();
  // Both applies wait on the silent peer's pair first, so they reach fed-b's pair together.
  const peers = [
    {
      name: 'fed-silent',
      role: 'initiator',
      address: `127.0.0.1:${port}`,
      hostname: 'fed-silent.test',
      preshared_key: newPsk(),
      shared_issuer_url: SHARED_ISSUER,
    },
    {
      name: 'fed-b',
      role: 'initiator',
      address: `127.0.0.1:${b.port}`,
      hostname: 'fed-b.test',
      preshared_key: psk,
      shared_issuer_url: SHARED_ISSUER,
    },
  ];
  const early = await applyPeers(a, peers);
  assert.equal(early.peers.find((o) => o.name === 'fed-b')?.outcome, 'pending', 'fed-b has not applied its side');
  assert.equal((await applyPeers(b, [receiver('fed-a', psk)])).peers[0]?.outcome, 'waiting');

  const runs = await Promise.all([applyPeers(a, peers), applyPeers(a, peers)]);
  const outcomes = runs.map((run) => run.peers.find((o) => o.name === 'fed-b') as Outcome);
  const paired = outcomes.find((o) => o.outcome === 'paired');
  const other = outcomes.find((o) => o !== paired);
  assert.ok(paired && other, JSON.stringify(outcomes));
  assert.deepEqual(
    [other.outcome, other.reason, other.federation_id, other.status],
    ['unchanged', 'paired_by_another_apply', paired.federation_id, 'PAIRED'],
  );
  const onB = (await records(b)).filter((r) => r.status === 'PAIRED');
  assert.equal(onB.length, 1, JSON.stringify(onB));

  // What the declared-set migration leaves of a second PAIRED record of one peer is named at every start.
  const id = paired.federation_id as string;
  a.gateway.deps.db
    .update(federations)
    .set({ declaredAs: null, statusReason: 'declared_duplicate' })
    .where(eq(federations.id, id))
    .run();
  const logged = a.logs.length;
  await a.restart();
  const warned = a.logs.slice(logged).filter((line) => line.includes('duplicate a declared peer'));
  assert.equal(warned.length, 1, a.logs.slice(logged).join(''));
  assert.ok(warned[0]?.includes(id), warned[0]);
});

test('a dry run plans the same whatever PSK it is given; applying replaces a pairing whose PSK changed', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const stored = newPsk();
  const made = await applyPeers(a, [receiver('fed-x', stored)]);
  const id = made.peers[0]?.federation_id;
  assert.ok(id);

  const right = await applyPeers(a, [receiver('fed-x', stored)], true);
  const wrong = await applyPeers(a, [receiver('fed-x', newPsk())], true);
  assert.deepEqual(wrong, right, 'the plan does not depend on whether the PSK is the stored one');
  assert.deepEqual(right.peers, [
    {
      name: 'fed-x',
      action: 'keep',
      psk: 'set_not_compared',
      outcome: 'planned',
      federation_id: id,
      status: 'WAITING',
      allowlist: { added: 0, changed: 0, revoked: 0 },
    },
  ]);
  const fresh = await applyPeers(a, [receiver('fed-new', newPsk())], true);
  assert.equal(fresh.peers.find((o) => o.name === 'fed-new')?.psk, 'will_be_set');

  const rotated = await applyPeers(a, [receiver('fed-x', newPsk())]);
  const outcome = rotated.peers[0] as Outcome;
  assert.deepEqual([outcome.action, outcome.outcome], ['replace', 'waiting']);
  assert.notEqual(outcome.federation_id, id);
  const before = (await records(a)).find((r) => r.id === id);
  assert.equal(before?.status, 'DISCONNECTED', 'the record with the old PSK was ended');
});

function scratch(t: { after(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-guards-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
}

test('apply refuses to send PSKs over plain http but to a loopback host', async (t) => {
  const a = await startPeer(t, 'fed-a', { httpPort: 0 });
  const write = scratch(t);
  const psk = write('x.psk', newPsk());
  const file = write(
    'peers.json',
    JSON.stringify({ peers: [{ name: 'fed-x', role: 'receiver', psk_file: psk, shared_issuer_url: SHARED_ISSUER }] }),
  );
  const token = write('admin.token', await a.adminToken());
  const httpUrl = a.gateway.httpUrl as string;
  const port = new URL(httpUrl).port;

  // fed-a.test names this gateway only inside its certificate: a plain-http call to it would cross the network.
  const refused = await runMeshgate([
    'federation',
    'apply',
    file,
    '--url',
    `http://fed-a.test:${port}`,
    '--token-file',
    token,
  ]);
  assert.equal(refused.code, 2, refused.out);
  assert.match(
    refused.out,
    /refusing to send the admin token and the PSKs of .*peers\.json to http:\/\/fed-a\.test:\d+/,
  );
  assert.match(refused.out, /use https:\/\//);
  assert.deepEqual(await records(a), [], 'nothing was sent');

  const planned = await runMeshgate([
    'federation',
    'apply',
    file,
    '--url',
    httpUrl,
    '--token-file',
    token,
    '--dry-run',
  ]);
  assert.equal(planned.code, 0, planned.out);
  assert.match(planned.out, /create\s+fed-x psk will be set/);
  const applied = await runMeshgate(['federation', 'apply', file, '--url', httpUrl, '--token-file', token]);
  assert.equal(applied.code, 0, applied.out);
  assert.match(applied.out, /fed-x: waiting /);
  const kept = await runMeshgate(['federation', 'apply', file, '--url', httpUrl, '--token-file', token, '--dry-run']);
  assert.match(kept.out, /keep\s+fed-x \(WAITING\) psk set/);
  assert.match(kept.out, /a plan does not compare PSKs/);
});
