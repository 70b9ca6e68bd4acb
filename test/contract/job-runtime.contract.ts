/**
 * The job runtime contract (one suite per interface, run
 * against every implementation): a real gateway configured with the runtime
 * under test, driven over HTTPS. Submit/status/logs/cancel, the result
 * marker, exit codes, stripped runtime_env keys, timeouts only on run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ConfigInput } from '../../gateway/config/schema.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { executorToken, MARKER, py, submit, waitFor, wheelFolder } from '../helpers/jobs.ts';

export interface RuntimeUnderTest {
  name: string;
  /** Gateway config selecting the runtime; called once the peer (if any) is up. */
  config(): ConfigInput;
}

/** The approved package every runtime must install from the operator's wheel folder. */
const PROBE = { name: 'meshgate-probe', version: '1.0.0', value: 'probe-ok' };

export function runJobRuntimeContract(target: RuntimeUnderTest): void {
  describe(`job runtime contract: ${target.name}`, () => {
    let gw: TestGateway;
    let token: string;
    let userId: string;
    const hooks: (() => unknown)[] = [];
    before(async () => {
      const t = { after: (fn: () => unknown) => hooks.push(fn) };
      const wheels = wheelFolder(t);
      const sha256 = wheels.build(PROBE.name, PROBE.version, PROBE.value);
      const pythonPackages = {
        catalogFile: wheels.catalog([{ name: PROBE.name, version: PROBE.version, sha256: [sha256] }]),
        wheelDir: wheels.dir,
      };
      const config = target.config();
      gw = await startTestGateway(t, { ...config, jobs: { ...config.jobs, pythonPackages } });
      ({ token, id: userId } = await executorToken(gw, 'runner', { clearance: 'S' }));
    });
    after(async () => {
      for (const fn of hooks.reverse()) await fn();
    });

    test('submit answers 201 PENDING at once; the job succeeds; logs and the augmented marker are served', async () => {
      const started = Date.now();
      const res = await submit(gw, token, {
        entrypoint: `echo hello-${target.name}; echo '${MARKER}{"answer":42}'`,
        metadata: { team: 'a' },
      });
      assert.equal(res.status, 201);
      assert.ok(Date.now() - started < 5000);
      assert.equal(res.json.status, 'PENDING');
      assert.equal(res.json.id, res.json.job_id);
      assert.equal(res.json.runtime_job_id, res.json.ray_job_id);
      assert.equal(typeof res.json.runtime_job_id, 'string');
      assert.equal(res.json.cluster_selector, 'local');
      assert.ok(!Number.isNaN(Date.parse(res.json.submitted_at)));
      const done = await waitFor(gw, token, res.json.id);
      assert.equal(done.status, 'SUCCEEDED');
      assert.equal(done.error_type, null);
      assert.deepEqual(done.metadata_, { team: 'a' });
      assert.equal(done.user_id, userId);
      assert.equal(done.source, 'local');
      assert.ok(done.started_at && done.ended_at && Date.parse(done.ended_at) >= Date.parse(done.started_at));
      const logs = await gw.request('GET', `/api/cluster/jobs/${res.json.id}/logs`, { token });
      assert.equal(logs.status, 200);
      assert.equal(logs.json.job_id, res.json.id);
      assert.match(logs.json.logs, new RegExp(`hello-${target.name}`));
      const result = await gw.request('GET', `/api/cluster/jobs/${res.json.id}/result`, { token });
      assert.equal(result.status, 200);
      const { job_id, status, answer, result: marker, audit_actor } = result.json;
      assert.deepEqual(
        { job_id, status, answer, marker, audit_actor },
        {
          job_id: res.json.id,
          status: 'SUCCEEDED',
          answer: 42,
          marker: { answer: 42 },
          audit_actor: userId,
        },
      );
    });

    test('a non-zero exit is FAILED with entrypoint_failed and the code; /result tells the outcome', async () => {
      const res = await submit(gw, token, { entrypoint: 'echo about-to-fail; exit 3' });
      const done = await waitFor(gw, token, res.json.id);
      assert.equal(done.status, 'FAILED');
      assert.equal(done.error_type, 'entrypoint_failed');
      assert.match(done.error_message, /exit code 3/);
      // A finished job's outcome is an answer, not an error: the platform's SDK reads it to report the failure.
      const result = await gw.request('GET', `/api/cluster/jobs/${res.json.id}/result`, { token });
      assert.equal(result.status, 200, result.text);
      assert.equal(result.json.status, 'FAILED');
      assert.equal(result.json.result, null);
      assert.equal(result.json.error, 'entrypoint_failed');
      assert.match(result.json.error_message, /exit code 3/);
    });

    test('the job sees env_vars and the platform identity; other runtime_env keys are stripped', async () => {
      const code =
        'import os,json; print("' +
        MARKER +
        '"+json.dumps({k:os.environ.get(k) for k in ' +
        '["FOO","PLATFORM_USER_ID","KAMIWAZA_USER_ID",' +
        '"PLATFORM_USER_ATTRS","KAMIWAZA_USER_ATTRS","PLATFORM_API_URL"]}))';
      const res = await gw.request('POST', '/api/cluster/jobs/run', {
        token,
        json: {
          entrypoint: py(code),
          // Left in, working_dir and pip would make the runtime fail or reach the network.
          runtime_env: {
            env_vars: { FOO: 'bar', PLATFORM_USER_ID: 'spoofed' },
            pip: ['requests'],
            working_dir: '/nonexistent',
            py_modules: ['x'],
            conda: 'y',
          },
        },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.status, 'SUCCEEDED', res.text);
      const env = res.json.result;
      assert.equal(env.FOO, 'bar');
      assert.equal(env.PLATFORM_USER_ID, userId, 'the platform identity wins over env_vars');
      assert.equal(env.KAMIWAZA_USER_ID, userId);
      assert.equal(JSON.parse(env.PLATFORM_USER_ATTRS).clearance, 'S');
      assert.equal(env.KAMIWAZA_USER_ATTRS, env.PLATFORM_USER_ATTRS);
      assert.equal(env.PLATFORM_API_URL, `${gw.url}/api`);
      const status = await gw.request('GET', `/api/cluster/jobs/${res.json.id}/status`, { token });
      assert.deepEqual(Object.keys(status.json.runtime_env), ['env_vars']);
      assert.deepEqual(
        status.json.runtime_env.env_vars,
        { FOO: '***', PLATFORM_USER_ID: '***' },
        'values never echoed',
      );
    });

    test('cancel stops a running job (STOPPED); a second cancel returns the record unchanged', async () => {
      const res = await submit(gw, token, { entrypoint: 'echo started; sleep 30' });
      await waitFor(gw, token, res.json.id, (b) => b.status === 'RUNNING');
      const cancel = await gw.request('POST', `/api/cluster/jobs/${res.json.id}/cancel`, { token });
      assert.equal(cancel.status, 200);
      assert.equal(cancel.json.status, 'STOPPED');
      assert.equal(cancel.json.timed_out, false);
      const again = await gw.request('POST', `/api/cluster/jobs/${res.json.id}/cancel`, { token });
      assert.equal(again.status, 200);
      assert.deepEqual(again.json, cancel.json);
      const status = await waitFor(gw, token, res.json.id);
      assert.equal(status.status, 'STOPPED');
      const result = await gw.request('GET', `/api/cluster/jobs/${res.json.id}/result`, { token });
      assert.equal(result.status, 200, result.text);
      assert.equal(result.json.status, 'STOPPED');
    });

    test('run: the marker comes back; timeout_seconds stops the job (STOPPED, timed_out)', async () => {
      const ok = await gw.request('POST', '/api/cluster/jobs/run', {
        token,
        json: { entrypoint: `echo '${MARKER}{"n":1}'; echo '${MARKER}{"n":2}'; echo trailing` },
      });
      assert.equal(ok.status, 200);
      assert.equal(ok.json.status, 'SUCCEEDED');
      assert.deepEqual(ok.json.result, { n: 2 });
      assert.equal(ok.json.timed_out, false);
      assert.equal(ok.json.id, ok.json.job_id);
      assert.equal(typeof ok.json.duration_seconds, 'number');
      const slow = await gw.request('POST', '/api/cluster/jobs/run', {
        token,
        json: { entrypoint: 'sleep 30', timeout_seconds: 2 },
      });
      assert.equal(slow.status, 200);
      assert.equal(slow.json.status, 'STOPPED');
      assert.equal(slow.json.timed_out, true);
      assert.equal(slow.json.error_type, 'timeout');
      assert.equal(slow.json.result, null);
      const record = await waitFor(gw, token, slow.json.id);
      assert.equal(record.timed_out, true);
      assert.equal(record.timeout_seconds, 2);
    });

    test('submit never enforces timeout_seconds', async () => {
      const res = await submit(gw, token, { entrypoint: `sleep 3; echo '${MARKER}{"late":true}'`, timeout_seconds: 1 });
      const done = await waitFor(gw, token, res.json.id);
      assert.equal(done.status, 'SUCCEEDED');
      assert.equal(done.timed_out, false);
      assert.equal(done.timeout_seconds, 1);
    });

    test('result codes: 409 while running, 410 without a marker, marker then crash is a FAILED outcome', async () => {
      const running = await submit(gw, token, { entrypoint: 'sleep 30' });
      await waitFor(gw, token, running.json.id, (b) => b.status === 'RUNNING');
      const early = await gw.request('GET', `/api/cluster/jobs/${running.json.id}/result`, { token });
      assert.equal(early.status, 409);
      assert.equal(early.json.detail.status, 'RUNNING');
      await gw.request('POST', `/api/cluster/jobs/${running.json.id}/cancel`, { token });
      const plain = await submit(gw, token, { entrypoint: 'echo only plain text' });
      await waitFor(gw, token, plain.json.id);
      const missing = await gw.request('GET', `/api/cluster/jobs/${plain.json.id}/result`, { token });
      assert.equal(missing.status, 410);
      assert.equal(missing.json.detail.reason, 'job_result_missing');
      const crash = await gw.request('POST', '/api/cluster/jobs/run', {
        token,
        json: { entrypoint: `echo '${MARKER}{"partial":1}'; echo '${MARKER}{oops'; exit 1` },
      });
      assert.equal(crash.json.status, 'FAILED');
      assert.deepEqual(crash.json.result, { partial: 1 });
      const crashResult = await gw.request('GET', `/api/cluster/jobs/${crash.json.id}/result`, { token });
      assert.equal(crashResult.status, 200, crashResult.text);
      assert.equal(crashResult.json.status, 'FAILED');
    });

    test('an approved python package is installed for the job; an unapproved one is refused', async () => {
      const code = `import json, meshgate_probe; print("${MARKER}" + json.dumps({"value": meshgate_probe.VALUE}))`;
      const run = await gw.request('POST', '/api/cluster/jobs/run', {
        token,
        json: { entrypoint: py(code), python_packages: [`${PROBE.name}==${PROBE.version}`] },
      });
      const logs = async () => (await gw.request('GET', `/api/cluster/jobs/${run.json.id}/logs`, { token })).json.logs;
      assert.equal(run.json.status, 'SUCCEEDED', await logs());
      assert.deepEqual(run.json.result, { value: PROBE.value });
      const refused = await submit(gw, token, { entrypoint: py(code), python_packages: [`${PROBE.name}==9.9.9`] });
      assert.deepEqual([refused.status, refused.json.detail.reason], [400, 'python_package_not_approved']);
    });
  });
}
