/**
 * Declared federation: one fleet file applied by the real `meshgate federation apply` (a separate process) to three
 * real gateways — a full mesh paired, a re-apply that changes nothing, a dry run that plans without acting, a member
 * removed and disconnected on both sides — and the same set read from the configuration at start.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runMeshgate } from '../../../helpers/cli.ts';
import { SHARED_ISSUER, startPeer } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';

function scratch(t: { after(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-declared-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
}

function fleetFile(gateways: readonly TestGateway[], keyFile: string) {
  return {
    defaults: { shared_issuer_url: SHARED_ISSUER },
    fleet: {
      psk_file: keyFile,
      members: gateways.map((gw) => ({
        name: gw.overrides.clusterName as string,
        address: `127.0.0.1:${gw.port}`,
        hostname: gw.overrides.hostnames?.[0],
      })),
    },
  };
}

async function records(gw: TestGateway) {
  const res = await gw.request('GET', '/api/cluster/federations?limit=1000', { token: await gw.adminToken() });
  assert.equal(res.status, 200, res.text);
  return res.json as { id: string; declared_as: string | null; status: string; status_reason: string | null }[];
}

async function apply(write: ReturnType<typeof scratch>, gw: TestGateway, file: string, ...extra: string[]) {
  const args = ['federation', 'apply', file, '--url', gw.gateway.httpsUrl];
  args.push('--token-file', write(`${gw.port}.token`, await gw.adminToken()));
  args.push('--ca', write(`${gw.port}-ca.pem`, gw.gateway.caPem), ...extra);
  return runMeshgate(args);
}

test('apply: a fleet file pairs a full mesh, re-applies as a no-op, plans on --dry-run, drops a member', async (t) => {
  const gateways = [await startPeer(t, 'fed-a'), await startPeer(t, 'fed-b'), await startPeer(t, 'fed-c')];
  const [a, b, c] = gateways as [TestGateway, TestGateway, TestGateway];
  const write = scratch(t);
  const key = write('fleet.key', `${crypto.randomUUID()}${crypto.randomUUID()}`);
  const file = write('fleet.json', JSON.stringify(fleetFile(gateways, key)));

  // Receivers first (c receives from a and b, b from a): one pass pairs every pair.
  for (const gw of [c, b, a]) {
    const run = await apply(write, gw, file);
    assert.equal(run.code, 0, run.out);
  }
  for (const gw of gateways) {
    const live = (await records(gw)).filter((r) => r.status === 'PAIRED');
    assert.equal(live.length, 2, `${gw.overrides.clusterName}: ${JSON.stringify(await records(gw))}`);
  }

  const again = await apply(write, a, file);
  assert.equal(again.code, 0, again.out);
  assert.match(again.out, /keep\s+fed-b \(PAIRED\)/);
  assert.match(again.out, /fed-b: unchanged/);
  assert.match(again.out, /fed-c: unchanged/);
  assert.equal((await records(a)).length, 2, 'no record was added by the re-apply');

  const without = write('fleet-ab.json', JSON.stringify(fleetFile([a, b], key)));
  const planned = await apply(write, a, without, '--dry-run');
  assert.equal(planned.code, 0, planned.out);
  assert.match(planned.out, /disconnect\s+fed-c \(PAIRED\)/);
  assert.equal((await records(a)).filter((r) => r.status === 'PAIRED').length, 2, 'a dry run changes nothing');

  const removed = await apply(write, a, without);
  assert.equal(removed.code, 0, removed.out);
  assert.match(removed.out, /fed-c: disconnected /);
  const onA = (await records(a)).find((r) => r.declared_as === 'fed-c');
  assert.deepEqual([onA?.status, onA?.status_reason], ['DISCONNECTED', 'operator_disconnect']);
  const onC = (await records(c)).find((r) => r.declared_as === 'fed-a');
  assert.deepEqual([onC?.status, onC?.status_reason], ['DISCONNECTED', 'peer_disconnect'], 'the peer was told');
});

test('apply refuses a file without a PSK and a member that is not this cluster, changing nothing', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const write = scratch(t);
  const noPsk = write('peers.json', JSON.stringify({ peers: [{ name: 'x', role: 'receiver' }] }));
  const refused = await apply(write, a, noPsk);
  assert.equal(refused.code, 1, refused.out);
  assert.match(refused.out, /peer x: give a PSK/);
  const key = write('fleet.key', 'k'.repeat(40));
  const stranger = write(
    'fleet.json',
    JSON.stringify({ fleet: { psk_file: key, members: [{ name: 'z', address: 'z.example' }] } }),
  );
  const notMember = await apply(write, a, stranger);
  assert.equal(notMember.code, 1, notMember.out);
  assert.match(notMember.out, /this cluster \(fed-a\) is not a fleet member/);
  assert.deepEqual(await records(a), []);
});

test('the declared set of the configuration is applied at start (receiver first, the initiator retries)', async (t) => {
  const write = scratch(t);
  const psk = `psk-${crypto.randomUUID()}`;
  const pskFile = write('ab.psk', psk);
  const b = await startPeer(t, 'fed-b');
  const a = await startPeer(t, 'fed-a', {
    federation: {
      peerTimeoutMs: 3000,
      declaredFile: write(
        'a.json',
        JSON.stringify({
          defaults: { shared_issuer_url: SHARED_ISSUER },
          peers: [
            {
              name: 'fed-b',
              role: 'initiator',
              address: `127.0.0.1:${b.port}`,
              hostname: 'fed-b.test',
              psk_file: pskFile,
            },
          ],
        }),
      ),
    },
  });
  // The receiver's side, applied through the API the CLI calls.
  const res = await b.request('POST', '/api/cluster/federations/apply', {
    token: await b.adminToken(),
    json: { peers: [{ name: 'fed-a', role: 'receiver', preshared_key: psk, shared_issuer_url: SHARED_ISSUER }] },
  });
  assert.equal(res.status, 200, res.text);
  const deadline = Date.now() + 20_000;
  let paired: { status: string }[] = [];
  while (Date.now() < deadline) {
    paired = (await records(a)).filter((r) => r.status === 'PAIRED');
    if (paired.length === 1) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.equal(paired.length, 1, 'the initiator paired once the receiver had applied its side');
});
