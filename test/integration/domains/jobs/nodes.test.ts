/**
 * Local jobs on a cluster of two nodes sharing PostgreSQL (whatever engine the rest of the run uses): a job runs on
 * the node that took it, and the other node answers for it — status from the shared record, logs and result by
 * asking the owner, a stop through the change feed — and ends it as lost once the owner has stopped answering.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTwoNodes } from '../../../helpers/engine.ts';
import { jobProcesses, MARKER, py, submit, waitFor } from '../../../helpers/jobs.ts';
import { waitFor as waitUntil } from '../../../helpers/wait.ts';

const JOBS = '/api/cluster/jobs';

async function twoNodes(t: Parameters<typeof startTwoNodes>[0]) {
  const [a, b] = await startTwoNodes(t, { jobs: { local: { stopGraceMs: 300 } } });
  return { a, b };
}

test('a job runs on the node that took it; the other reads its status, logs and result, and stops it', async (t) => {
  const { a, b } = await twoNodes(t);
  const token = await a.adminToken();
  const long = (await submit(a, token, { entrypoint: 'echo started-on-a; sleep 60' })).json.id as string;
  await waitFor(b, token, long, (body) => body.status === 'RUNNING');
  assert.ok(existsSync(join(a.dataDir, 'jobs', long)), 'the job runs on node a');
  assert.equal(existsSync(join(b.dataDir, 'jobs', long)), false, 'and nowhere else');
  await waitUntil(
    async () => (await b.request('GET', `${JOBS}/${long}/logs`, { token })).json.logs?.includes('started'),
    {
      what: "node a's log read through node b",
    },
  );
  const stopped = await b.request('POST', `${JOBS}/${long}/cancel`, { token });
  assert.equal(stopped.status, 200, stopped.text);
  assert.equal(stopped.json.status, 'STOPPED');
  await waitUntil(() => jobProcesses(long).length === 0, { what: "the job's processes on node a ending" });
  assert.equal((await a.request('GET', `${JOBS}/${long}/status`, { token })).json.status, 'STOPPED');

  const code = py(`import json; print("${MARKER}" + json.dumps({"answer": 42}))`);
  const done = (await submit(a, token, { entrypoint: code })).json.id as string;
  assert.equal((await waitFor(b, token, done)).status, 'SUCCEEDED');
  const result = await b.request('GET', `${JOBS}/${done}/result`, { token });
  assert.equal(result.status, 200, result.text);
  assert.deepEqual(result.json.result, { answer: 42 });
  // Node a authorizes the forwarded read as it would its own: another user's token finds no such job there.
  const other = await b.userToken('mallory');
  assert.equal((await b.request('GET', `${JOBS}/${done}/logs`, { token: other.token })).status, 404);
});

test('when the node running a job stops answering, another node ends the job as lost', async (t) => {
  const { a, b } = await twoNodes(t);
  const token = await a.adminToken();
  const id = (await submit(a, token, { entrypoint: 'sleep 60' })).json.id as string;
  await waitFor(b, token, id, (body) => body.status === 'RUNNING');
  // Stopped as a crash would leave it: the job's processes outlive the node's gateway.
  await a.stop({ jobsOutlive: true });
  t.after(() => {
    for (const pid of jobProcesses(id)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        // Killing the shell first can take its child with it before that child's turn comes.
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
  });
  const lost = await waitFor(b, token, id, (body) => body.status === 'FAILED', 20_000);
  assert.match(lost.error_message ?? lost.message ?? JSON.stringify(lost), /stopped answering/);
  const logs = await b.request('GET', `${JOBS}/${id}/logs`, { token });
  assert.equal(logs.status, 503, 'its logs were on the node that stopped');
});

test("a node URL a database writer points at plain HTTP never receives a caller's token", async (t) => {
  const { a, b } = await twoNodes(t);
  const token = await a.adminToken();
  const id = (await submit(a, token, { entrypoint: 'echo on-a' })).json.id as string;
  assert.equal((await waitFor(b, token, id)).status, 'SUCCEEDED');
  const heard: (string | undefined)[] = [];
  const listener = createServer((req, res) => {
    heard.push(req.headers.authorization);
    res.end('{}');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  t.after(() => listener.close());
  const { port } = listener.address() as { port: number };
  // What someone with write access to the database can do: every heartbeat of node a now records this URL.
  b.gateway.deps.sql.exec(`
    CREATE FUNCTION steal_node_url() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN NEW.url := 'http://127.0.0.1:${port}'; RETURN NEW; END $$;
    CREATE TRIGGER steal_node_url BEFORE INSERT OR UPDATE ON cluster_nodes
      FOR EACH ROW EXECUTE FUNCTION steal_node_url();
    UPDATE cluster_nodes SET heartbeat_at = heartbeat_at;`);
  const logs = await b.request('GET', `${JOBS}/${id}/logs`, { token });
  assert.equal(logs.status, 503, logs.text);
  assert.deepEqual(heard, [], 'no request, and so no token, reached the planted URL');
});
