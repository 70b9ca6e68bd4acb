/**
 * Login throttling against a real gateway: one client guessing is blocked
 * with 429 + Retry-After, a flood of wrong passwords on the admin's name from
 * 32 other loopback addresses gets a bounded number of guesses in all and
 * neither locks the admin out (from where they signed in before) nor starves
 * their login, and no password reaches the log. Behind a trusted proxy each
 * forwarded client has its own budget; an untrusted peer's X-Forwarded-For
 * is ignored, so rotating it buys nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { ADMIN_PASSWORD, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

const WRONG = 'not-the-password';

/** A client on its own loopback address (Linux routes all of 127/8 locally), TLS verified as the harness does. */
function clientAt(gw: TestGateway, localAddress: string): Agent {
  return new Agent({ localAddress, connect: { ca: gw.gateway.caPem, servername: 'localhost' } });
}

async function login(gw: TestGateway, agent: Agent, password: string, username = 'admin', forwardedFor?: string) {
  const res = await request(`${gw.gateway.httpsUrl}/api/auth/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
    },
    body: new URLSearchParams({ username, password, grant_type: 'password' }).toString(),
    dispatcher: agent,
  });
  const text = await res.body.text();
  return { status: res.statusCode, retryAfter: res.headers['retry-after'], json: JSON.parse(text) };
}

const logLines = (gw: TestGateway, needle: string) =>
  gw.logs
    .join('')
    .split('\n')
    .filter((line) => line.includes(needle));

test(
  '60 wrong passwords at once from one client, then the right one: 429 ' + 'with Retry-After, one lockout line',
  async (t) => {
    const gw = await startTestGateway(t);
    const agent = clientAt(gw, '127.0.0.2');
    t.after(() => agent.close());
    const wrong = await Promise.all(Array.from({ length: 60 }, () => login(gw, agent, WRONG)));
    const checked = wrong.filter((r) => r.status === 401).length;
    // Ten failures lock the client; at most the hashes already running when it locked also finish.
    assert.ok(checked >= 10 && checked <= 12, `${checked} passwords were checked`);
    const refused = wrong.filter((r) => r.status === 429);
    assert.equal(refused.length, 60 - checked, 'every other attempt is refused, none queued forever');
    for (const r of refused) assert.equal(r.json.detail.reason, 'too_many_attempts');
    const right = await login(gw, agent, ADMIN_PASSWORD);
    assert.equal(right.status, 429);
    assert.equal(right.json.detail.reason, 'too_many_attempts');
    assert.match(String(right.retryAfter), /^[1-9]\d*$/);
    assert.equal(Number(right.retryAfter), right.json.detail.retry_after);
    assert.equal(right.json.access_token, undefined);
    const lockouts = logLines(gw, 'login_lockout');
    assert.equal(lockouts.length, 1, lockouts.join('\n'));
    assert.match(lockouts[0] as string, /"scope":"client".*"client":"127\.0\.0\.2"/);
    assert.ok(!gw.logs.join('').includes(WRONG) && !gw.logs.join('').includes(ADMIN_PASSWORD), 'no password is logged');
    // Another address is a different client: the admin still signs in from it.
    assert.equal(
      (await gw.request('POST', '/api/auth/token', { form: { username: 'admin', password: ADMIN_PASSWORD } })).status,
      200,
    );
  },
);

test(
  "32 clients spraying the admin's name get a bounded number of guesses " + 'and cannot lock the owner out',
  async (t) => {
    const gw = await startTestGateway(t);
    await gw.adminToken(); // the owner has signed in from 127.0.0.1 before the spray
    const flooders = Array.from({ length: 32 }, (_, i) => clientAt(gw, `127.0.1.${i + 1}`));
    t.after(() => Promise.all(flooders.map((a) => a.close())));
    const statuses: number[] = [];
    let stop = false;
    const flood = flooders.map(async (agent) => {
      // Bounded: eight guesses per client, stopped early once the admin has been measured.
      for (let i = 0; i < 8 && !stop; i++) statuses.push((await login(gw, agent, `${WRONG}-${i}`)).status);
    });
    // Wait until the username is locked against the flooders (their guesses turn into 429).
    while (!statuses.includes(429) && statuses.length < 256)
      await Promise.race([...flood, new Promise((r) => setTimeout(r, 20))]);
    assert.ok(statuses.includes(429), 'the spray locked the username for clients that keep failing');
    const admin = await gw.request('POST', '/api/auth/token', {
      form: { username: 'admin', password: ADMIN_PASSWORD },
    });
    stop = true;
    await Promise.all(flood);
    assert.equal(admin.status, 200, admin.text);
    assert.equal(
      (await gw.request('GET', '/api/auth/users/me', { token: admin.json.access_token })).json.username,
      'admin',
    );
    // 20 (accountBurst) + 5 (lockedAccountCleanTries) + the hashes already running when each bucket emptied.
    const guesses = statuses.filter((s) => s === 401).length;
    assert.ok(guesses <= 20 + 5 + 4, `the spray made ${guesses} guesses in all, not one per address`);
    const fresh = clientAt(gw, '127.0.2.1');
    t.after(() => fresh.close());
    const unknown = await login(gw, fresh, ADMIN_PASSWORD);
    assert.equal(unknown.status, 429, "a clean client the username has never seen waits for the clean clients' bucket");
    assert.equal(unknown.json.detail.reason, 'too_many_attempts');
    const lockouts = logLines(gw, '"scope":"account"');
    assert.equal(lockouts.length, 1, 'one line for the username lockout');
    assert.match(lockouts[0] as string, /"username":"admin"/);
  },
);

test('a flood from one address cannot queue more than its share: excess answered 429 at once', async (t) => {
  const gw = await startTestGateway(t, { auth: { throttle: { clientBurst: 1000, hashQueuePerClient: 4 } } });
  const agent = clientAt(gw, '127.0.0.3');
  t.after(() => agent.close());
  const burst = await Promise.all(Array.from({ length: 20 }, () => login(gw, agent, WRONG, 'nobody')));
  assert.equal(burst.filter((r) => r.status === 401).length, 4, 'four waited or hashed');
  assert.equal(burst.filter((r) => r.status === 429 && r.retryAfter === '1').length, 16);
});

test('behind a trusted proxy the forwarded client is throttled; rotating X-Forwarded-For spares no one', async (t) => {
  const gw = await startTestGateway(t, { auth: { forwardAuth: { trustedProxies: ['127.0.0.4'] } } });
  const proxy = clientAt(gw, '127.0.0.4');
  const attacker = clientAt(gw, '127.0.0.5');
  t.after(() => Promise.all([proxy.close(), attacker.close()]));
  // Each guesser tries a name of its own: only the client budget is measured.
  const statuses = async (agent: Agent, forwardedFor: (i: number) => string, n: number) => {
    const out: number[] = [];
    const name = `nobody-${forwardedFor(0)}`;
    for (let i = 0; i < n; i++) out.push((await login(gw, agent, WRONG, name, forwardedFor(i))).status);
    return out;
  };
  // The proxy appends the address it saw; whatever the client wrote itself lies left of it and is not believed.
  const guesser = await statuses(proxy, () => '10.9.9.9, 198.51.100.1', 11);
  assert.deepEqual(guesser, [...Array(10).fill(401), 429], 'the forwarded client has its budget of ten');
  assert.match(logLines(gw, 'login_lockout').join('\n'), /"client":"198\.51\.100\.1"/);
  assert.deepEqual(
    await statuses(proxy, () => '198.51.100.2', 1),
    [401],
    'another client behind the same proxy keeps its own budget',
  );
  const rotating = await statuses(attacker, (i) => `203.0.113.${i + 1}`, 11);
  assert.deepEqual(
    rotating,
    [...Array(10).fill(401), 429],
    'an untrusted peer is its own client, whatever it forwards',
  );
});
