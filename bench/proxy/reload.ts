/**
 * bench/proxy/reload.ts: what a reload and a worker crash cost a client
 * under a steady wrk load (HTTP/1.1 keep-alive through the runtime proxy,
 * meshgate with 2 workers). Three runs of BENCH_SECONDS each: no event, a
 * `meshgate reload` at a quarter of the run (it must finish within the run:
 * reported), a worker SIGKILLed at a quarter of the run. wrk's errors (connect, read, write, timeout, non-2xx) are
 * reported per run; never a timing assertion.
 *   npx tsx bench/proxy/reload.ts   (env: BENCH_SECONDS=20 BENCH_CONNECTIONS=32)
 */
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startMeshgate } from './meshgate.ts';
import { CONNECTIONS, child, childrenOf, freePort, runBench } from './peers.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const run = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..');
const stops: (() => void)[] = [];

/** wrk's own summary: requests, and every kind of error it counts. */
function parse(out: string) {
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/
    .exec(out)
    ?.slice(1)
    .map(Number) ?? [0, 0, 0, 0];
  return {
    requests: Number(/(\d+) requests in/.exec(out)?.[1]),
    non_2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    connect_errors: socket[0],
    read_errors: socket[1],
    write_errors: socket[2],
    timeouts: socket[3],
  };
}

async function main(): Promise<void> {
  const upstream = await child<{ port: number }>('upstream.ts', []);
  const gateway = await startMeshgate(`http://127.0.0.1:${upstream.hello.port}`, await freePort(), ['--workers', '2']);
  const dataDir = /--data-dir (\S+)/.exec(
    readFileSync(`/proc/${gateway.pid}/cmdline`, 'utf8').replaceAll('\0', ' '),
  )?.[1] as string;
  const wrk = () =>
    run('wrk', [
      '-t2',
      `-c${CONNECTIONS}`,
      `-d${SECONDS}s`,
      '-H',
      `Authorization: Bearer ${gateway.token}`,
      `${gateway.url}/hello`,
    ]);
  const at = (ms: number, event: () => unknown) => new Promise((resolve) => setTimeout(() => resolve(event()), ms));
  stops.push(gateway.stop);
  const results: Record<string, unknown> = {};
  await wrk(); // warm-up
  results.steady = parse((await wrk()).stdout);
  const reloading = wrk();
  await at((SECONDS * 1000) / 4, () => execFileSync(join(repo, 'bin', 'meshgate'), ['reload', '--data-dir', dataDir]));
  const reloaded = parse((await reloading).stdout);
  // The reload must have finished while wrk still ran, or the run measured only part of it.
  const finished = readFileSync(join(dataDir, 'stdout.log'), 'utf8').includes('meshgate reloaded (2 workers replaced)');
  results.reload = { ...reloaded, completed_within_the_run: finished };
  const crashing = wrk();
  await at((SECONDS * 1000) / 4, () => process.kill(childrenOf(gateway.pid)[0] as number, 'SIGKILL'));
  results.sigkill_one_worker = parse((await crashing).stdout);
  process.stdout.write(`${JSON.stringify({ seconds: SECONDS, connections: CONNECTIONS, ...results }, null, 2)}\n`);
}

runBench(main, stops);
