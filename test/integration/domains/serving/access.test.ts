/**
 * One access decision for a deployment, whichever way it is reached: the
 * deployments API, its runtime URL over HTTP/2 and HTTP/1.1, a websocket
 * upgrade, its legacy port, and (domains/mesh/e2e-runtime.test.ts) a mesh-brokered
 * caller. Every caller × kind × path answers alike; a caller who may not
 * see a deployment gets the very 404 of an id that does not exist, and an
 * anonymous caller the 401 of the API, existing id or not.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { type After, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { deployLegacy, type LegacyRecord, startAppServer } from '../../../helpers/upstreams.ts';

const KINDS = ['model', 'app', 'tool'] as const;
const MISSING = '00000000-0000-4000-8000-000000000000';

type Deployed = LegacyRecord & { legacy_url: string };

/** `ok`, or `<status> <reason>`: what a caller learns from one path. */
type Outcome = string;

function outcome(status: number, body: string): Outcome {
  if (status < 400) return 'ok';
  // A 401 keeps the platform's plain `{"detail": "Not authenticated"}`; other refusals carry a reason.
  const { detail } = JSON.parse(body) as { detail: string | { reason: string } };
  return `${status} ${typeof detail === 'string' ? detail : detail.reason}`;
}

function agent(t: After, gw: TestGateway, allowH2: boolean): Agent {
  const dispatcher = new Agent({ connect: { ca: gw.gateway.caPem }, allowH2 });
  t.after(() => dispatcher.close());
  return dispatcher;
}

async function get(url: string, dispatcher: Agent, token: string | null): Promise<{ outcome: Outcome; body: string }> {
  const res = await request(url, { dispatcher, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const body = await res.body.text();
  return { outcome: outcome(res.statusCode, body), body };
}

async function websocket(gw: TestGateway, path: string, token: string | null): Promise<Outcome> {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const ws = new WebSocket(`${gw.url.replace('https', 'wss')}${path}`, { ca: gw.gateway.caPem, headers });
  ws.on('error', () => {}); // a refused handshake is reported as an error as well
  const opened = once(ws, 'open').then(() => 'ok');
  const refused = once(ws, 'unexpected-response').then(async (args) => {
    const res = args[1] as IncomingMessage;
    let body = '';
    for await (const chunk of res) body += String(chunk);
    return outcome(res.statusCode ?? 0, body);
  });
  const result = await Promise.race([opened, refused]);
  ws.terminate();
  return result;
}

/** The answers of every path for one caller and deployment, keyed by path. */
async function answers(gw: TestGateway, agents: { h2: Agent; h1: Agent }, d: Deployed, token: string | null) {
  return {
    api: outcome(...(await apiGet(gw, d.id, token))),
    h2: (await get(`${gw.url}${d.runtime_path}/`, agents.h2, token)).outcome,
    h1: (await get(`${gw.url}${d.runtime_path}/`, agents.h1, token)).outcome,
    websocket: await websocket(gw, `${d.runtime_path}/ws`, token),
    legacy: (await get(`${d.legacy_url}/`, agents.h2, token)).outcome,
  };
}

async function apiGet(gw: TestGateway, id: string, token: string | null): Promise<[number, string]> {
  const res = await gw.request('GET', `/api/serving/deployments/${id}`, token ? { token } : {});
  return [res.status, res.text];
}

async function writeTuple(gw: TestGateway, method: 'POST' | 'DELETE', token: string, json: object): Promise<number> {
  return (await gw.request(method, '/api/auth/tuples', { token, json })).status;
}

async function patch(gw: TestGateway, id: string, token: string, visibility: string) {
  return gw.request('PATCH', `/api/serving/deployments/${id}`, { token, json: { visibility } });
}

function same(outcome: Outcome) {
  return { api: outcome, h2: outcome, h1: outcome, websocket: outcome, legacy: outcome };
}

async function setup(t: After) {
  const gw = await startTestGateway(t, { serving: { legacyPortListeners: true } });
  const agents = { h2: agent(t, gw, true), h1: agent(t, gw, false) };
  // One upstream for every kind: it answers `/` and upgrades `/ws`, so only the gateway's decision differs.
  const upstream = await startAppServer(t);
  const admin = await gw.adminToken();
  const users = {
    owner: await gw.userToken('olive'),
    viewer: await gw.userToken('victor'),
    unrelated: await gw.userToken('ursula'),
    revoked: await gw.userToken('rita'),
  };
  const tuple = (id: string, relation: string, kind: string, user: string) => ({
    subject: { namespace: 'user', id: user },
    relation,
    object: { namespace: kind, id },
  });
  const deployAll = async (suffix: string, extra: Record<string, unknown>) => {
    const out: Deployed[] = [];
    for (const kind of KINDS) {
      const body = { kind, name: `${kind}-${suffix}`, upstream: upstream.url, ...extra };
      const d = (await deployLegacy(gw, body)) as Deployed;
      // The administrator makes olive an owner; olive, as owner, grants victor and rita themselves.
      assert.equal(await writeTuple(gw, 'POST', admin, tuple(d.id, 'owner', kind, users.owner.id)), 204);
      for (const who of [users.viewer, users.revoked]) {
        assert.equal(await writeTuple(gw, 'POST', users.owner.token, tuple(d.id, 'viewer', kind, who.id)), 204);
      }
      out.push(d);
    }
    return out;
  };
  return { gw, agents, admin, users, tuple, deployAll };
}

test('callers × kinds × paths: every path gives the API answer; a revoked grant holds at once', async (t) => {
  const { gw, agents, admin, users, tuple, deployAll } = await setup(t);
  const deployments = await deployAll('private', {});
  // The 404 a caller gets for an id that does not exist, on the API and on a runtime URL.
  const [missingStatus, missingBody] = await apiGet(gw, MISSING, users.unrelated.token);
  assert.equal(missingStatus, 404);
  const missingRuntime = await get(`${gw.url}/runtime/apps/${MISSING}/`, agents.h2, users.unrelated.token);

  for (const d of deployments) {
    // Used once before the revocation, so a cached decision would show below.
    const rita = users.revoked;
    assert.deepEqual(await answers(gw, agents, d, rita.token), same('ok'), `rita before revocation, ${d.kind}`);
    assert.equal(await writeTuple(gw, 'DELETE', users.owner.token, tuple(d.id, 'viewer', d.kind, rita.id)), 204);

    const table: [string, string | null, ReturnType<typeof same>][] = [
      ['owner', users.owner.token, same('ok')],
      ['admin', admin, same('ok')],
      ['viewer grant', users.viewer.token, same('ok')],
      ['unrelated user', users.unrelated.token, same('404 deployment_not_found')],
      ['revoked viewer', users.revoked.token, same('404 deployment_not_found')],
      ['anonymous', null, same('401 Not authenticated')],
    ];
    for (const [caller, token, expected] of table) {
      assert.deepEqual(await answers(gw, agents, d, token), expected, `${caller} on a ${d.kind}`);
    }

    // No oracle: "exists but hidden" reads exactly like "does not exist", id aside.
    const [, hiddenBody] = await apiGet(gw, d.id, users.unrelated.token);
    assert.deepEqual(shape(hiddenBody, d.id), shape(missingBody, MISSING));
    const hiddenRuntime = await get(`${gw.url}${d.runtime_path}/`, agents.h2, users.unrelated.token);
    assert.deepEqual(shape(hiddenRuntime.body, d.id), shape(missingRuntime.body, MISSING));
    assert.deepEqual(shape(hiddenRuntime.body, d.id), shape(hiddenBody, d.id), 'the runtime URL answers like the API');
    const anonymousMissing = await get(`${gw.url}/runtime/${d.kind}s/${MISSING}/`, agents.h1, null);
    assert.equal(anonymousMissing.outcome, '401 Not authenticated', 'anonymous callers cannot probe ids either');
  }
});

/** An error body with its request id and the asked-for id blanked: what is left must not differ. */
function shape(body: string, id: string): unknown {
  const parsed = JSON.parse(body.replaceAll(id, '<id>')) as { detail: Record<string, unknown> };
  return { ...parsed, detail: { ...parsed.detail, request_id: undefined } };
}

test('visibility authenticated shares with every signed-in user; owners change it at once', async (t) => {
  const { gw, agents, users, deployAll } = await setup(t);
  const shared = await deployAll('shared', { visibility: 'authenticated' });
  for (const d of shared) {
    assert.deepEqual(await answers(gw, agents, d, users.unrelated.token), same('ok'), `ursula on a shared ${d.kind}`);
    const anonymous = same('401 Not authenticated');
    assert.deepEqual(await answers(gw, agents, d, null), anonymous, `anonymous on a shared ${d.kind}`);

    const byViewer = await patch(gw, d.id, users.viewer.token, 'private');
    assert.deepEqual([byViewer.status, byViewer.json.detail.reason], [403, 'rebac_denied'], 'viewers may not');
    const bad = await patch(gw, d.id, users.owner.token, 'public');
    assert.equal(bad.status, 422, bad.text);
    const byOwner = await patch(gw, d.id, users.owner.token, 'private');
    assert.equal(byOwner.status, 200, byOwner.text);
    assert.equal(byOwner.json.visibility, 'private');

    const hidden = same('404 deployment_not_found');
    assert.deepEqual(await answers(gw, agents, d, users.unrelated.token), hidden, `ursula once ${d.kind} is private`);
    assert.deepEqual(await answers(gw, agents, d, users.viewer.token), same('ok'), 'explicit viewers keep it');
    const byStranger = await patch(gw, d.id, users.unrelated.token, 'authenticated');
    assert.deepEqual([byStranger.status, byStranger.json.detail.reason], [404, 'deployment_not_found'], 'no oracle');
  }
  const listed = await gw.request('GET', '/api/serving/deployments?kind=all', { token: users.viewer.token });
  assert.deepEqual(listed.json.map((d: Deployed) => d.kind).sort(), ['app', 'model', 'tool']);
  assert.ok(
    listed.json.every((d: { upstream?: string }) => d.upstream === undefined),
    'upstream addresses stay with administrators',
  );
  const strangers = await gw.request('GET', '/api/serving/deployments?kind=all', { token: users.unrelated.token });
  assert.deepEqual(strangers.json, []);
});

/** An open websocket through the gateway with `token`; `closed` settles when the gateway (or anyone) closes it. */
async function openSocket(gw: TestGateway, path: string, token: string) {
  const ws = new WebSocket(`${gw.url.replace('https', 'wss')}${path}`, {
    ca: gw.gateway.caPem,
    headers: { authorization: `Bearer ${token}` },
  });
  ws.on('error', () => {}); // the gateway cutting the socket is the expected outcome
  await once(ws, 'open');
  const closed = once(ws, 'close').then(() => true);
  return { ws, closed };
}

test(
  'an open websocket is closed when its access is lost: grant revoked, ' + 'user disabled, deployment deleted',
  async (t) => {
    const gw = await startTestGateway(t);
    const upstream = await startAppServer(t);
    const admin = await gw.adminToken();
    const viewer = await gw.userToken('wanda');
    const bystander = await gw.userToken('walt');
    const grant = (id: string, user: string) => ({
      subject: { namespace: 'user', id: user },
      relation: 'viewer',
      object: { namespace: 'app', id },
    });
    const deployed = async (name: string) => {
      const res = await gw.request('POST', '/api/serving/deployments', {
        token: admin,
        json: { kind: 'app', name, upstream: upstream.url },
      });
      assert.equal(res.status, 201, res.text);
      for (const who of [viewer, bystander])
        assert.equal(await writeTuple(gw, 'POST', admin, grant(res.json.id, who.id)), 204);
      return res.json as { id: string; runtime_path: string };
    };

    const first = await deployed('ws-grant');
    const byGrant = await openSocket(gw, `${first.runtime_path}/ws`, viewer.token);
    const untouched = await openSocket(gw, `${first.runtime_path}/ws`, bystander.token);
    assert.equal(await writeTuple(gw, 'DELETE', admin, grant(first.id, viewer.id)), 204);
    assert.equal(await byGrant.closed, true, "the viewer's socket closes once the grant is revoked");

    assert.equal(await writeTuple(gw, 'POST', admin, grant(first.id, viewer.id)), 204);
    const byUser = await openSocket(gw, `${first.runtime_path}/ws`, viewer.token);
    assert.equal(
      (await gw.request('PUT', `/api/auth/users/${viewer.id}`, { token: admin, json: { active: false } })).status,
      200,
    );
    assert.equal(await byUser.closed, true, 'a disabled user loses the open socket');
    assert.equal(
      (await gw.request('PUT', `/api/auth/users/${viewer.id}`, { token: admin, json: { active: true } })).status,
      200,
    );

    const second = await deployed('ws-deleted');
    const byDeployment = await openSocket(gw, `${second.runtime_path}/ws`, bystander.token);
    assert.equal((await gw.request('DELETE', `/api/serving/deployments/${second.id}`, { token: admin })).status, 204);
    assert.equal(await byDeployment.closed, true, 'a deleted deployment takes its sockets with it');
    // Every socket is re-checked on each pass, and passes never overlap: the ones that closed since the grant was
    // revoked prove full passes ran, and the other viewer's socket came through them open.
    untouched.ws.send('still here');
    const [echo] = await once(untouched.ws, 'message');
    assert.equal(String(echo), 'echo:still here', 'another viewer of the same deployment keeps theirs');
    untouched.ws.terminate();
  },
);
