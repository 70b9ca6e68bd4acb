/**
 * A long response on a runtime URL lasts only as long as its access, as an
 * open websocket does: a model's SSE completion, held open by the upstream
 * (a gate the test opens), is ended once its user is disabled or its PAT
 * revoked, over HTTP/2 and HTTP/1.1, while another user's stream on the same
 * deployment runs to its end.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { type After, startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { deploy, Gate, startModelServer } from '../../../helpers/upstreams.ts';

function agent(t: After, gw: TestGateway, allowH2: boolean): Agent {
  const dispatcher = new Agent({ connect: { ca: gw.gateway.caPem }, allowH2 });
  t.after(() => dispatcher.close());
  return dispatcher;
}

/**
 * A streamed completion whose first chunk arrived; `rest` settles with what followed once the body ends. The upstream
 * holds the rest until the gate opens, so a body that ends before then without `[DONE]` was cut by the gateway
 * (over HTTP/1.1 the client sees the connection close; over HTTP/2 a reset stream, which undici ends quietly).
 */
async function openCompletion(gw: TestGateway, path: string, token: string, dispatcher: Agent) {
  const res = await request(`${gw.url}${path}/v1/chat/completions`, {
    method: 'POST',
    dispatcher,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['content-type'] as string, /^text\/event-stream/);
  const chunks = res.body[Symbol.asyncIterator]();
  const first = await chunks.next();
  assert.match(String(first.value), /"content":"Hello"/);
  const rest = (async () => {
    let text = '';
    try {
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) text += String(next.value);
    } catch {
      // cut over HTTP/1.1: what came before is the answer
    }
    return text;
  })();
  return { rest };
}

test('an SSE stream through a runtime URL ends when its user is disabled or its PAT revoked', async (t) => {
  const gate = new Gate();
  const upstream = await startModelServer(t, gate);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const model = await deploy(gw, { kind: 'model', name: 'sse', upstream: upstream.url, visibility: 'authenticated' });
  const viewer = await gw.userToken('vera');
  const bystander = await gw.userToken('bill');
  const pat = await gw.request('POST', '/api/auth/pats', { token: bystander.token, json: { name: 'stream' } });
  assert.equal(pat.status, 200, pat.text);
  const [h2, h1] = [agent(t, gw, true), agent(t, gw, false)];

  const viewerStreams = [
    await openCompletion(gw, model.runtime_path, viewer.token, h2),
    await openCompletion(gw, model.runtime_path, viewer.token, h1),
  ];
  const byPat = await openCompletion(gw, model.runtime_path, pat.json.token, h2);
  const untouched = await openCompletion(gw, model.runtime_path, bystander.token, h2);

  const disabled = await gw.request('PUT', `/api/auth/users/${viewer.id}`, { token: admin, json: { active: false } });
  assert.equal(disabled.status, 200, disabled.text);
  for (const stream of viewerStreams)
    assert.doesNotMatch(await stream.rest, /\[DONE\]/, 'a disabled user loses the open stream before its end');
  const revoked = await gw.request('DELETE', `/api/auth/pats/${pat.json.pat.jti}`, { token: bystander.token });
  assert.equal(revoked.status, 200, revoked.text);
  assert.doesNotMatch(await byPat.rest, /\[DONE\]/, 'a revoked PAT loses the stream it opened');

  // The other user's stream came through the sweeps that cut these open: it runs to its end once the upstream goes on.
  gate.open();
  assert.match(await untouched.rest, /data: \[DONE\]/);
});
