/** `meshgate federation pair` against two real gateways over HTTPS; secrets come from files or stdin. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { federationCommand } from '../../../../domains/federation/cli.ts';
import type { CliEnv } from '../../../../gateway/module.ts';
import { newPsk, SHARED_ISSUER, startPeer } from '../../../helpers/federation.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';

function cliEnv(gw: TestGateway, stdin = ''): CliEnv & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return {
    config: gw.gateway.deps.config,
    boot: () => {
      throw new Error('federation pair boots no domain');
    },
    readStdin: async () => stdin,
    out: (line) => lines.push(line),
    err: (line) => errors.push(line),
    lines,
    errors,
  };
}

async function files(t: { after(fn: () => void): void }, a: TestGateway, b: TestGateway, psk: string) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
  return [
    '--initiator-url',
    a.gateway.httpsUrl,
    '--initiator-ca',
    write('a-ca.pem', a.gateway.caPem),
    '--initiator-token-file',
    write('a.token', await a.adminToken()),
    '--receiver-url',
    b.gateway.httpsUrl,
    '--receiver-ca',
    write('b-ca.pem', b.gateway.caPem),
    '--receiver-token-file',
    write('b.token', await b.adminToken()),
    '--receiver-ip',
    `127.0.0.1:${b.port}`,
    '--receiver-hostname',
    'fed-b.test',
    '--initiator-ip',
    `127.0.0.1:${a.port}`,
    '--initiator-hostname',
    'fed-a.test',
    '--initiator-name',
    'fed-a',
    '--receiver-name',
    'fed-b',
    '--shared-issuer-url',
    SHARED_ISSUER,
    '--psk-file',
    write('psk', `${psk}\n`),
  ];
}

test(
  'federation pair runs preflight, both creates, pair and ping; the PSK ' + 'never appears in argv or output',
  async (t) => {
    const a = await startPeer(t, 'fed-a');
    const b = await startPeer(t, 'fed-b');
    const psk = newPsk();
    const args = await files(t, a, b, psk);
    const env = cliEnv(a);
    const code = await federationCommand.run(['pair', ...args], env);
    assert.equal(code, 0, env.errors.join('\n'));
    assert.ok(!args.some((arg) => arg.includes(psk)));
    assert.ok(!env.lines.join('\n').includes(psk));
    const summary = JSON.parse(env.lines.at(-1) as string);
    assert.equal(summary.reachable, true);
    for (const [gw, id] of [
      [a, summary.initiator_federation_id],
      [b, summary.receiver_federation_id],
    ] as const) {
      const rec = await gw.request('GET', `/api/cluster/federations/${id}`, { token: await gw.adminToken() });
      assert.equal(rec.json.status, 'PAIRED');
    }
  },
);

test('federation pair reads the PSK from stdin, and stops at the failing step with its reason', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const args = (await files(t, a, b, 'unused')).slice(0, -2);
  const wrongRoute = args.map((v) => (v === 'fed-b.test' ? 'wrong.test' : v));
  const env = cliEnv(a, `${newPsk()}\n`);
  assert.equal(await federationCommand.run(['pair', ...wrongRoute, '--psk-stdin'], env), 1);
  assert.match(env.errors.join('\n'), /preflight of 127\.0\.0\.1:\d+: tls_hostname_mismatch/);
  assert.equal(
    (await a.request('GET', '/api/cluster/federations', { token: await a.adminToken() })).json.length,
    0,
    'nothing created',
  );
  const ok = cliEnv(a, `${newPsk()}\n`);
  assert.equal(await federationCommand.run(['pair', ...args, '--psk-stdin'], ok), 0, ok.errors.join('\n'));
  const usage = cliEnv(a);
  assert.equal(await federationCommand.run(['pair', ...args], usage), 2, 'a PSK source is required');
  assert.match(usage.errors.join('\n'), /--psk-file, --psk-stdin/);
});

test('federation pair sends no PSK or admin token over plain http but to a loopback host', async (t) => {
  const a = await startPeer(t, 'fed-a');
  const b = await startPeer(t, 'fed-b');
  const args = (await files(t, a, b, 'unused')).slice(0, -2);
  const plain = (flag: string, host: string, port: number) => {
    const copy = [...args];
    copy[copy.indexOf(flag) + 1] = `http://${host}:${port}`;
    return copy;
  };
  let read = false;
  for (const [flag, host, port] of [
    ['--receiver-url', 'fed-b.test', b.port],
    ['--initiator-url', 'fed-a.test', a.port],
  ] as const) {
    const env = {
      ...cliEnv(a),
      readStdin: async () => {
        read = true;
        return `${newPsk()}\n`;
      },
    };
    const errors: string[] = [];
    env.err = (line) => errors.push(line);
    assert.equal(await federationCommand.run(['pair', ...plain(flag, host, port), '--psk-stdin'], env), 2);
    assert.match(
      errors.join('\n'),
      new RegExp(`refusing to send the PSK and an admin token to http://${host}:\\d+ over plain http \\(${flag}\\)`),
    );
  }
  assert.equal(read, false, 'the PSK was not even read');
  for (const gw of [a, b])
    assert.deepEqual(
      (await gw.request('GET', '/api/cluster/federations', { token: await gw.adminToken() })).json,
      [],
      'nothing was sent',
    );
});
