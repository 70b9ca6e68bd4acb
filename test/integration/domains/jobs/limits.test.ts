/**
 * Per-job limits under attack: a job that fills its private /tmp, one that runs a memory bomb and a fork bomb
 * at once, and one that reaches for the network when jobs have none. Each attack must stay inside its own job:
 * a job running beside it finishes, and the gateway keeps serving. On this project's machines the caps are
 * cgroup v1 (hybrid hosts); a delegated cgroup v2 takes the same tests.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { executorToken, jobProcesses, MARKER, py, submit, waitFor } from '../../../helpers/jobs.ts';

const JOBS = '/api/cluster/jobs';
const MiB = 1024 * 1024;

function log(gw: TestGateway, jobId: string): string {
  try {
    return readFileSync(join(gw.dataDir, 'jobs', jobId, 'output.log'), 'utf8');
  } catch {
    return '';
  }
}

/** Jobs outlive their gateway: one a failed test left running is killed outright. */
function killJob(jobId: string): void {
  for (const pid of jobProcesses(jobId)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // ended meanwhile
    }
  }
}

async function ping(gw: TestGateway): Promise<void> {
  assert.equal((await gw.request('GET', '/api/ping')).status, 200, 'the gateway keeps serving');
}

/** A job beside the attack that forks 20 processes and holds 64 MiB, then prints its marker. */
const NEIGHBOUR = py(
  'import subprocess\n' +
    'children = [subprocess.Popen(["sleep", "0.2"]) for _ in range(20)]\n' +
    'codes = [child.wait() for child in children]\n' +
    'held = bytes([1]) * (64 << 20)\n' +
    `print("${MARKER}" + '{"forked": %d, "held_mib": %d}' % (len(codes), len(held) >> 20))`,
);

test('a job writes its private /tmp up to the cap and fails past it, inside the job only', async (t) => {
  const limits = { tmpBytes: 4 * MiB };
  const gw = await startTestGateway(t, { jobs: { local: { maxLogBytes: 16 * MiB, stopGraceMs: 200, limits } } });
  const { token } = await executorToken(gw, 'mallory');
  const filler = await submit(gw, token, {
    entrypoint:
      'ls -ld /tmp; dd if=/dev/zero of=/tmp/fill bs=1M count=3 2>/dev/null && echo up-to-cap=ok; ' +
      'dd if=/dev/zero of=/tmp/past bs=1M count=2; echo past-cap=$?; sleep 60',
  });
  t.after(() => killJob(filler.json.id));
  await waitFor(gw, token, filler.json.id, () => log(gw, filler.json.id).includes('past-cap='));
  const filled = log(gw, filler.json.id);
  assert.match(filled, /^drwxrwxrwt /m, 'a world-writable, sticky /tmp, as on the host');
  assert.ok(filled.includes('up-to-cap=ok'), filled);
  assert.ok(filled.includes('No space left on device'), filled);
  assert.ok(filled.includes('past-cap=1'), filled);
  // The filler's /tmp is its own: a job beside it has the whole cap, and the gateway is untouched.
  const beside = await gw.request('POST', `${JOBS}/run`, {
    token,
    json: { entrypoint: `dd if=/dev/zero of=/tmp/mine bs=1M count=3 && echo '${MARKER}{"wrote": 3}'` },
  });
  assert.deepEqual([beside.json.status, beside.json.result], ['SUCCEEDED', { wrote: 3 }], beside.text);
  await ping(gw);
  const record = (await gw.request('GET', `${JOBS}/${filler.json.id}/status`, { token })).json;
  assert.equal(record.status, 'RUNNING', 'a full /tmp fails a write, not the job');
  assert.equal(record.limits.tmp_bytes, 4 * MiB);
  await gw.request('POST', `${JOBS}/${filler.json.id}/cancel`, { token });
  assert.equal((await waitFor(gw, token, filler.json.id)).status, 'STOPPED');
});

test('a memory bomb and a fork bomb in one job leave a job beside it and the gateway unharmed', async (t) => {
  const limits = { memoryBytes: 128 * MiB, processes: 48 };
  const gw = await startTestGateway(t, { jobs: { local: { stopGraceMs: 200, limits } } });
  const { token } = await executorToken(gw, 'mallory');
  // 32 MiB more at a time, each page written, up to 1 GiB; then sleeps started until fork fails (the shell then
  // exits), each holding its process slot; the job then waits without forking again.
  const memoryBomb = py(
    'held = []\n' +
      'while len(held) < 32:\n' +
      '    held.append(bytes([1]) * (32 << 20))\n' +
      '    print("held", len(held) * 32, flush=True)',
  );
  const bomb = await submit(gw, token, {
    entrypoint:
      `${memoryBomb}; echo memory-bomb-ended; (while :; do sleep 600 & done) 2>/dev/null; ` +
      'echo fork-bomb-full; exec sleep 60',
  });
  t.after(() => killJob(bomb.json.id));
  await waitFor(gw, token, bomb.json.id, () => log(gw, bomb.json.id).includes('fork-bomb-full'));
  const record = (await gw.request('GET', `${JOBS}/${bomb.json.id}/status`, { token })).json;
  assert.equal(record.status, 'RUNNING');
  assert.ok(['v1', 'v2'].includes(record.limits.cgroup), JSON.stringify(record.limits));
  assert.equal(record.limits.memory_bytes, 128 * MiB);
  assert.equal(record.limits.processes, 48);
  // Every process of the job, its supervisor and bwrap included, is in the job's own cgroup.
  const v2 = record.limits.cgroup === 'v2';
  const processes = jobProcesses(bomb.json.id);
  assert.ok(processes.length >= 3, 'the supervisor, bwrap and the bomb run');
  for (const pid of processes) {
    let cgroups = '';
    try {
      cgroups = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    } catch {
      continue; // a bomb process that ended meanwhile
    }
    const own = cgroups.split('\n').filter((line) => (v2 ? /^0::/ : /:(memory|pids):/).test(line));
    assert.ok(own.length > 0 && own.every((line) => line.includes(`/meshgate-job-${bomb.json.id}`)), cgroups);
  }
  const neighbour = await gw.request('POST', `${JOBS}/run`, { token, json: { entrypoint: NEIGHBOUR } });
  assert.deepEqual([neighbour.json.status, neighbour.json.result], ['SUCCEEDED', { forked: 20, held_mib: 64 }]);
  await ping(gw);
  const held = [...log(gw, bomb.json.id).matchAll(/^held (\d+)$/gm)].map((m) => Number(m[1]));
  assert.ok(held.length > 0 && Math.max(...held) <= 128, `the bomb held at most its cap: ${held.join(' ')}`);
  await gw.request('POST', `${JOBS}/${bomb.json.id}/cancel`, { token });
  assert.equal((await waitFor(gw, token, bomb.json.id)).status, 'STOPPED');
  for (let i = 0; i < 250 && jobProcesses(bomb.json.id).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(jobProcesses(bomb.json.id), [], 'nothing of the bomb outlives its cancel');
});

/** A loopback listener that counts the connections it accepts. */
async function listener(t: {
  after(fn: () => Promise<void>): void;
}): Promise<{ port: number; accepted: () => number }> {
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as { port: number }).port, accepted: () => accepted };
}

/** Connects to each port on loopback; prints `connected <port>` or `unreachable <port>`. */
function connect(ports: number[]): string {
  return py(
    'import socket\n' +
      `for port in ${JSON.stringify(ports)}:\n` +
      '    try:\n' +
      '        socket.create_connection(("127.0.0.1", port), timeout=5).close()\n' +
      '        print("connected", port)\n' +
      '    except OSError as error:\n' +
      '        print("unreachable", port, error)',
  );
}

test('with jobs.local.network "none" a job reaches no loopback listener, not even the gateway', async (t) => {
  const target = await listener(t);
  const gw = await startTestGateway(t, { jobs: { local: { network: 'none' } } });
  const { token } = await executorToken(gw, 'mallory');
  const gatewayPort = Number(new URL(gw.url).port);
  const run = await gw.request('POST', `${JOBS}/run`, {
    token,
    json: { entrypoint: connect([target.port, gatewayPort]) },
  });
  assert.equal(run.json.status, 'SUCCEEDED', run.text);
  const logs = (await gw.request('GET', `${JOBS}/${run.json.id}/logs`, { token })).json.logs as string;
  assert.ok(logs.includes(`unreachable ${target.port}`) && logs.includes(`unreachable ${gatewayPort}`), logs);
  assert.equal(logs.includes('connected'), false, logs);
  assert.equal(target.accepted(), 0, 'the listener saw no connection');
  const record = (await gw.request('GET', `${JOBS}/${run.json.id}/status`, { token })).json;
  assert.equal(record.limits.network, 'none');
  await ping(gw);
});

test('with the default network "host" the same job reaches the listener (the check above can see one)', async (t) => {
  const target = await listener(t);
  const gw = await startTestGateway(t);
  const { token } = await executorToken(gw, 'mallory');
  const run = await gw.request('POST', `${JOBS}/run`, { token, json: { entrypoint: connect([target.port]) } });
  const logs = (await gw.request('GET', `${JOBS}/${run.json.id}/logs`, { token })).json.logs as string;
  assert.ok(logs.includes(`connected ${target.port}`), logs);
  assert.equal(target.accepted(), 1);
  assert.equal((await gw.request('GET', `${JOBS}/${run.json.id}/status`, { token })).json.limits.network, 'host');
});
