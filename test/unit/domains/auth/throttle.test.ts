import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FairQueue } from '../../../../domains/auth/throttle.ts';
import { clientKey } from '../../../../gateway/http/client-key.ts';

test('clientKey: IPv4 as is, IPv4-mapped unwrapped, IPv6 by its /64 whatever the spelling', () => {
  const cases: [string | undefined, string][] = [
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:aaaa::1', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    [undefined, 'unknown'],
  ];
  for (const [address, key] of cases) assert.equal(clientKey(address), key, String(address));
});

test('FairQueue: a client with many waiting jobs does not delay another client by more than one turn', async () => {
  const queue = new FairQueue(1, 100, 1000);
  const order: string[] = [];
  const releases: (() => void)[] = [];
  const job = (client: string) =>
    queue.run(client, async () => {
      order.push(client);
      await new Promise<void>((resolve) => releases.push(resolve));
    });
  const jobs = [...Array.from({ length: 5 }, () => job('flood')), job('admin')];
  // One job runs at a time: finish each as soon as it has started.
  for (let finished = 0; finished < jobs.length; finished++) {
    while (releases.length === 0) await new Promise((resolve) => setImmediate(resolve));
    (releases.shift() as () => void)();
  }
  await Promise.all(jobs);
  assert.deepEqual(
    order.slice(0, 3),
    ['flood', 'flood', 'admin'],
    'the admin goes right after the flood job already queued ahead of it',
  );
});

test('FairQueue: past the per-client and total bounds a job is refused at once, with retry_after', async () => {
  const queue = new FairQueue(1, 2, 3);
  let release!: () => void;
  const blocked = new Promise<void>((resolve) => {
    release = resolve;
  });
  const running = [queue.run('a', () => blocked), queue.run('a', () => blocked)];
  await assert.rejects(
    queue.run('a', async () => {}),
    (e: { status: number; reason: string; extra: { retry_after: number } }) =>
      e.status === 429 && e.reason === 'too_many_attempts' && e.extra.retry_after === 1,
  );
  const third = queue.run('b', () => blocked);
  await assert.rejects(
    queue.run('c', async () => {}),
    (e: { status: number; reason: string }) => e.status === 503 && e.reason === 'login_busy',
  );
  release();
  await Promise.all([...running, third]);
  await queue.run('c', async () => {});
});
