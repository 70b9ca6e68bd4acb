/**
 * The Slack source against a local Slack Web API server on loopback
 * (test/helpers/slack-api.ts; Slack itself is a SaaS): the source contract,
 * channels by name and ID, cursors, thread replies, the since/until window,
 * max_messages, 429 Retry-After, the token from a catalog secret or
 * credential_override (never logged), and the server going away mid-stream.
 * The contract fixture's messages are the contract rows themselves (no
 * `ts`), because the suite compares whole rows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { slackSources } from '../../../../../../domains/retrieval/sources/slack/source.ts';
import { runSourceContract } from '../../../../../contract/source.contract.ts';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { createDataset, createJob } from '../../../../../helpers/retrieval.ts';
import { streamThroughOutage } from '../../../../../helpers/retrieval-sources.ts';
import { type SlackMessage, startSlackApi } from '../../../../../helpers/slack-api.ts';

const TOKEN = 'xoxb-meshgate-test-token-7f3a';
const T0 = 1_700_000_000;

runSourceContract('slack', async (t, rows) => {
  const api = await startSlackApi(t, TOKEN, [
    { id: 'C0CONTRACT', name: 'contract', messages: rows.map((r) => ({ ...r })) },
  ]);
  return slackSources(() => undefined).create({
    urn: 'urn:li:dataset:(urn:li:dataPlatform:slack,contract,PROD)',
    platform: 'slack',
    name: 'contract',
    properties: { api_url: api.url },
    options: { channels: ['C0CONTRACT'] },
    credentialOverride: TOKEN,
    formatHint: 'json',
    tag: 'meshgate-retrieval:slack-test',
  });
});

/** `count` messages, newest first; every 100th starts a thread of three replies. */
function history(count: number): { messages: SlackMessage[]; threads: Record<string, SlackMessage[]> } {
  const oldestFirst = Array.from({ length: count }, (_, i) => ({
    type: 'message',
    user: `U${i % 5}`,
    text: `m${i}`,
    ts: `${T0 + i * 60}.000100`,
  }));
  const threads: Record<string, SlackMessage[]> = {};
  for (const parent of oldestFirst.filter((_, i) => i % 100 === 0)) {
    Object.assign(parent, { thread_ts: parent.ts, reply_count: 3 });
    const replies = [1, 2, 3].map((r) => ({
      type: 'message',
      user: 'U9',
      text: `re ${parent.text} ${r}`,
      ts: `${Number(parent.ts) + r}.000200`,
      thread_ts: parent.ts,
    }));
    threads[parent.ts] = [parent, ...replies];
  }
  return { messages: oldestFirst.reverse(), threads };
}

test(
  'slack through the gateway: names, cursors, replies, window, ' +
    'max_messages, 429 Retry-After; the token stays secret',
  async (t) => {
    const general = history(450);
    const api = await startSlackApi(t, TOKEN, [
      { id: 'C0GENERAL', name: 'general', ...general },
      {
        id: 'C0RANDOM',
        name: 'random',
        messages: [{ type: 'message', user: 'U1', text: 'hello', ts: `${T0}.000300` }],
      },
    ]);
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const secret = (
      await gw.request('POST', '/api/catalog/secrets/', { token: admin, json: { name: 'slack-token', value: TOKEN } })
    ).json;
    const urn = await createDataset(gw, admin, {
      name: 'workspace',
      platform: 'slack',
      properties: { api_url: api.url, secret_urn: secret },
    });
    const read = async (options: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      (await createJob(gw, admin, { dataset_urn: urn, options, format_hint: 'json', ...extra })).inline
        .data as SlackMessage[];

    const all = await read({ channels: ['#general', 'C0RANDOM'] });
    assert.deepEqual(all, [...general.messages, { type: 'message', user: 'U1', text: 'hello', ts: `${T0}.000300` }]);
    const pages = api.calls.filter((c) => c.method === 'conversations.history' && c.params.channel === 'C0GENERAL');
    assert.ok(pages.length >= 3 && pages.slice(1).every((c) => c.params.cursor), 'history followed next_cursor');
    assert.ok(api.calls.every((c) => c.authorized));

    const withReplies = await read({ channels: ['general'], include_replies: true });
    assert.equal(withReplies.length, 450 + 5 * 3);
    const parentAt = withReplies.findIndex((m) => m.ts === `${T0 + 100 * 60}.000100`);
    assert.deepEqual(
      withReplies.slice(parentAt + 1, parentAt + 4).map((m) => m.text),
      ['re m100 1', 're m100 2', 're m100 3'],
    );

    const since = new Date((T0 + 400 * 60) * 1000).toISOString();
    const until = new Date((T0 + 409 * 60 + 30) * 1000).toISOString();
    const window = await read({ channels: ['general'], since_ts: since, until_ts: until });
    assert.deepEqual(
      window.map((m) => m.text),
      Array.from({ length: 10 }, (_, i) => `m${409 - i}`),
    );
    assert.equal((await read({ channels: ['general'], max_messages: 7 })).length, 7);
    assert.deepEqual(
      await read({ channels: ['general'] }, { filters: { user: 'U3' }, columns: ['text'], limit_rows: 2 }),
      [{ text: 'm448' }, { text: 'm443' }],
    );

    api.rateLimitNext(1, 1);
    const before = api.calls.length;
    const started = Date.now();
    assert.equal((await read({ channels: ['C0RANDOM'] })).length, 1);
    assert.ok(Date.now() - started >= 900, 'waited for Retry-After');
    assert.equal(api.calls.length - before, 2, 'one 429, then the retry');

    const viaOverride = await read({ channels: ['C0RANDOM'] }, { credential_override: TOKEN });
    assert.equal(viaOverride.length, 1);
    const refusals: [Record<string, unknown>, number, string][] = [
      [{ options: { channels: [] } }, 422, 'source_options_invalid'],
      [{ options: { channels: ['general'], max_messages: -1 } }, 422, 'source_options_invalid'],
      [{ options: { channels: ['general'], since_ts: 'last week' } }, 422, 'source_options_invalid'],
      [{ options: { channels: ['nope'] } }, 404, 'source_not_found'],
      [{ options: { channels: ['general'] }, credential_override: 'xoxb-wrong-token-123' }, 502, 'source_unavailable'],
    ];
    for (const [body, status, reason] of refusals) {
      const res = await gw.request('POST', '/api/retrieval/jobs', {
        token: admin,
        json: { dataset_urn: urn, ...body },
      });
      assert.equal(res.status, status, res.text);
      assert.equal(res.json.detail.reason, reason);
      assert.doesNotMatch(res.text, /xoxb-/);
    }
    assert.ok(!gw.logs.join('').includes('xoxb-'), 'no token in any log line');
  },
);

test('slack server gone mid-stream: an error event, the job FAILED with source_unavailable, no hang', async (t) => {
  const big = history(6000);
  const api = await startSlackApi(t, TOKEN, [{ id: 'C0BIG', name: 'big', messages: big.messages }]);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, { name: 'big', platform: 'slack', properties: { api_url: api.url } });
  const job = await createJob(gw, admin, {
    dataset_urn: urn,
    transport: 'sse',
    batch_size: 50,
    options: { channels: ['C0BIG'] },
    credential_override: TOKEN,
  });
  const outcome = await streamThroughOutage(gw, admin, job.job_id, () => api.stop());
  assert.ok(outcome.rows < 6000, `stopped after ${outcome.rows} rows`);
  assert.equal(outcome.last.event, 'error');
  assert.equal(outcome.last.data.reason, 'source_unavailable');
  assert.deepEqual(
    { status: outcome.job.status, error: outcome.job.error },
    { status: 'FAILED', error: 'source_unavailable' },
  );
});
