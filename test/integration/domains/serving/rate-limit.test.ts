/**
 * A deployment's `rate_limit` through its runtime URL: keyed by the user (two users behind one address each have
 * their own), by the address for anonymous callers; beyond it `429 rate_limited` with Retry-After, and the refused
 * request never reaches the upstream.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { deploy, startHoldingServer } from '../../../helpers/upstreams.ts';

test('beyond its burst a caller gets 429 rate_limited with Retry-After; another user keeps their own', async (t) => {
  const gw = await startTestGateway(t);
  const upstream = await startHoldingServer(t);
  let reached = 0;
  upstream.server.prependListener('request', () => {
    reached++;
  });
  const app = await deploy(gw, {
    kind: 'model',
    name: 'limited',
    upstream: upstream.url,
    visibility: 'authenticated',
    rate_limit: { requests_per_second: 0.1, burst: 3 },
  });
  const [alice, bob] = [await gw.userToken('alice'), await gw.userToken('bob')];
  const get = (token: string) => gw.request('GET', `${app.runtime_path}/quick`, { token });
  for (let i = 0; i < 3; i++) assert.equal((await get(alice.token)).status, 200);
  const refused = await get(alice.token);
  assert.equal(refused.status, 429);
  assert.equal(refused.json.detail.reason, 'rate_limited');
  assert.equal(refused.headers['retry-after'], '10', 'a token every ten seconds');
  assert.equal(reached, 3, 'the refused request never reached the upstream');
  assert.equal((await get(bob.token)).status, 200, 'bob, at the same address, has his own bucket');

  const anonymous = await deploy(gw, {
    kind: 'app',
    name: 'anonymous',
    upstream: upstream.url,
    requires_auth: false,
    rate_limit: { requests_per_second: 0.1, burst: 1 },
  });
  assert.equal((await gw.request('GET', `${anonymous.runtime_path}/quick`)).status, 200);
  assert.equal((await gw.request('GET', `${anonymous.runtime_path}/quick`)).status, 429, 'keyed by the address');
});
