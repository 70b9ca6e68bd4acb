/**
 * Gate discovery: `POST /api/authz/gates/discover` describes
 * the gates this gateway ships — execution (jobs) and per-record
 * (retrieval) — under their class paths and upstream aliases, for native
 * administrators; anything else is unimportable or not allowed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';

const DISCOVER = '/api/authz/gates/discover';

test('discover describes the built-in gates by class path and alias; other class paths are 404 or 403', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const discover = (classpath: unknown, token = admin) => gw.request('POST', DISCOVER, { token, json: { classpath } });

  const clearance = {
    name: 'clearance_gate',
    kind: 'attribute',
    required_attributes: [{ key: 'clearance', header: 'x-user-clearance', required: true }],
    config_schema: {
      type: 'object',
      properties: { classification_field: { type: 'string', minLength: 1, maxLength: 256, default: 'classification' } },
      additionalProperties: false,
    },
    location: 'builtin',
  };
  for (const classpath of [
    'platform.gates.clearance.ClearanceGate',
    'acme_gates.mini_clearance_gate.MiniClearanceGate',
  ]) {
    const res = await discover(classpath);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { ...clearance, classpath });
  }
  const allowAll = await discover('kamiwaza.services.authz.gates.default_gates.AllowAllExecutionGate');
  assert.deepEqual(allowAll.json, {
    name: 'allow_all_execution_gate',
    kind: 'execution',
    required_attributes: [],
    config_schema: { type: 'object', properties: {}, additionalProperties: false },
    classpath: 'kamiwaza.services.authz.gates.default_gates.AllowAllExecutionGate',
    location: 'builtin',
  });

  // What discovery reports is what binding accepts: a config outside the schema is refused there too.
  const urn = 'urn:li:dataset:(urn:li:dataPlatform:file,discovered,PROD)';
  await gw.request('POST', '/api/catalog/datasets/', {
    token: admin,
    json: { name: 'discovered', platform: 'file', properties: { path: '/x.csv' } },
  });
  const gate = `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`;
  assert.equal(
    (
      await gw.request('PUT', gate, {
        token: admin,
        json: { type: 'platform.gates.clearance.ClearanceGate', config: { other: 1 } },
      })
    ).status,
    400,
  );

  for (const [classpath, status, reason] of [
    ['platform.gates.nope.NoGate', 404, 'classpath_unimportable'],
    ['acme_gates.mini_access_tier_gate.MiniAccessTierGate', 404, 'classpath_unimportable'],
    ['os.system', 403, 'classpath_not_allowed'],
  ] as const) {
    const res = await discover(classpath);
    assert.deepEqual(
      [res.status, res.json.detail.reason, res.json.detail.classpath],
      [status, reason, classpath],
      classpath,
    );
  }
  assert.equal((await discover('')).status, 422);
  // Each binding refuses the other kind, as discovery tells them apart.
  const asExecution = await gw.request('PUT', '/api/cluster/execution-gate', {
    token: admin,
    json: { type: 'acme_gates.mini_clearance_gate.MiniClearanceGate' },
  });
  assert.deepEqual(
    [asExecution.status, asExecution.json.detail.reason, asExecution.json.detail.expected],
    [400, 'wrong_kind', 'execution'],
  );
  const asRecord = await gw.request('PUT', gate, {
    token: admin,
    json: { type: 'platform.gates.default_gates.AllowAllExecutionGate' },
  });
  assert.deepEqual(
    [asRecord.status, asRecord.json.detail.reason, asRecord.json.detail.expected],
    [400, 'wrong_kind', 'attribute'],
  );
  const user = await gw.userToken('not-admin');
  assert.deepEqual(
    [(await discover('platform.gates.clearance.ClearanceGate', user.token)).json.detail.reason],
    ['admin_required'],
  );
});
