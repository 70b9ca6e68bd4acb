/**
 * bench/proxy/access.ts: the CPU the runtime proxy's access decision adds to
 * a request, in process, beside its peer in the same run: the deployment
 * lookup alone (an anonymous call of a deployment that needs no credential,
 * which is what the proxy did before it decided per caller). The authz index
 * holds 100k tuples (1000 users × 100 objects) besides the caller's grant.
 * The wrk figures of run.ts move by more than this between reps.
 *   npx tsx bench/proxy/access.ts   (env: BENCH_ITERATIONS=1000000)
 */
import { deploymentInput } from '../../domains/serving/input.ts';
import { localPrincipal, memoryDeployments } from '../../test/helpers/deployments.ts';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 1_000_000);
const REPS = 5;

const { authz, service, close } = memoryDeployments();
const admin = localPrincipal('bench-admin', ['admin']);
const deploy = async (name: string, requiresAuth: boolean) => {
  const input = deploymentInput.parse({
    kind: 'model',
    name,
    upstream: 'http://127.0.0.1:9',
    requires_auth: requiresAuth,
  });
  return (await service.create(admin, input)).id;
};
const open = await deploy('open', false);
const granted = await deploy('granted', true);
const relations = ['owner', 'editor', 'viewer'];
for (let u = 0; u < 1000; u++) {
  authz.write(
    Array.from({ length: 100 }, (_, o) => ({
      subject: { namespace: 'user', id: `user-${u}` },
      relation: relations[(u + o) % 3] as string,
      object: { namespace: 'model', id: `object-${o}` },
    })),
  );
}
const viewer = localPrincipal('bench-viewer');
const stranger = localPrincipal('bench-stranger');
authz.write([
  {
    subject: { namespace: 'user', id: viewer.userId },
    relation: 'viewer',
    object: { namespace: 'model', id: granted },
  },
]);

/** CPU ns per call, the median of REPS runs (each after the same warm-up). */
function measure(call: () => unknown): number {
  const runs: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    for (let i = 0; i < 10_000; i++) call();
    const before = process.cpuUsage();
    for (let i = 0; i < ITERATIONS; i++) call();
    const used = process.cpuUsage(before);
    runs.push(((used.user + used.system) * 1000) / ITERATIONS);
  }
  return runs.sort((a, b) => a - b)[Math.floor(REPS / 2)] as number;
}

const check = (row: unknown, expected: boolean) => {
  if ((row !== null) !== expected) throw new Error('bench setup: unexpected decision');
};
check(service.resolveFor(viewer, 'model', granted), true);
check(service.resolveFor(stranger, 'model', granted), false);

const peer = measure(() => service.resolveFor(null, 'model', open));
const cases: [string, () => unknown][] = [
  ['viewer grant, cached (every request after the first)', () => service.resolveFor(viewer, 'model', granted)],
  ['unrelated user, cached (404)', () => service.resolveFor(stranger, 'model', granted)],
  ['native admin, cached', () => service.resolveFor(admin, 'model', granted)],
  // A new principal object each call: a miss every time (first request of a token, or after any tuple change).
  ['viewer grant, not cached', () => service.resolveFor({ ...viewer }, 'model', granted)],
];
console.log('| case | ns CPU per call | added to the lookup (ns) |\n|---|---|---|');
console.log(`| lookup alone (peer) | ${peer.toFixed(0)} | — |`);
for (const [name, call] of cases) {
  const ns = measure(call);
  console.log(`| ${name} | ${ns.toFixed(0)} | ${(ns - peer).toFixed(0)} |`);
}
close();
