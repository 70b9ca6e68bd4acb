/**
 * A reload that cannot apply changes nothing, then or later: one changing a setting the primary's own work runs on
 * is refused whole (and `meshgate reload` exits 1 saying so), and one whose workers cannot start leaves every later
 * restart on the configuration that served.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { execMeshgate } from '../../../helpers/artifact.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { ADMIN_PASSWORD, serve, workerPids, workersScratch } from '../../../helpers/workers.ts';

test('a reload of a restart-only setting is refused; after a failed one a crashed worker restarts', async (t) => {
  const { dir } = workersScratch(t);
  const file = join(dir, 'meshgate.json');
  writeFileSync(file, JSON.stringify({ bind: '127.0.0.1' }));
  const args = ['--config', file, '--https-port', '0', '--workers', '2', '--log-level', 'info'];
  const served = await serve(join(dir, 'data'), args, { PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD });
  t.after(() => served.killTree());
  const primary = served.child.pid as number;
  const before = workerPids(primary);

  writeFileSync(file, JSON.stringify({ bind: '127.0.0.1', workerListen: 'shared' }));
  // `meshgate reload` waits for the outcome and fails, saying why, when the reload is refused.
  await assert.rejects(
    execMeshgate(['reload', '--data-dir', join(dir, 'data')]),
    (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.match(error.stderr, /^meshgate reload failed: workerListen changed: .*take a restart/m);
      return true;
    },
  );
  const refused = await served.waitForLine(/^meshgate reload failed: workerListen changed/);
  assert.match(refused, /take a restart/);
  assert.deepEqual(workerPids(primary), before, 'no worker was replaced');

  // Valid for the schema, but no worker can bind it (TEST-NET-1, not an address of this host).
  writeFileSync(file, JSON.stringify({ bind: '192.0.2.1' }));
  process.kill(primary, 'SIGHUP');
  await served.waitForLine(/^meshgate reload failed: (?!workerListen)/);
  const [victim] = workerPids(primary);
  process.kill(victim as number, 'SIGKILL');
  await waitFor(() => workerPids(primary).length === 2 && !workerPids(primary).includes(victim as number), {
    what: 'the crashed worker replaced, on the configuration that served',
    timeoutMs: 15_000,
  });
  assert.doesNotMatch(served.output(), /worker replacement failed to start/);
  const agent = new Agent({ connect: { ca: served.ca, servername: 'localhost' } });
  t.after(() => agent.close());
  for (let i = 0; i < 6; i++) {
    const res = await request(`${served.base}/api/ping`, { dispatcher: agent, reset: true });
    await res.body.dump();
    assert.equal(res.statusCode, 200, 'both workers serve');
  }
});
