/**
 * Per-record gates: the gate binding API and the clearance
 * fixture — five rows U, U, U, S, TS; callers with clearance U, S, TS get
 * exactly 3, 4, 5 rows with gate_audit.filtered true, true, false on the
 * inline, SSE and gRPC seams, the four legacy footer keys present and null.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import {
  createDataset,
  createJob,
  grantViewer,
  grpcRows,
  readGrpc,
  readSse,
  sseRows,
  V1,
} from '../../../helpers/retrieval.ts';
import { CLEARANCE_ROWS, writeAllFormats } from '../../../helpers/retrieval-fixtures.ts';

const CLEARANCE_GATE = 'platform.gates.clearance.ClearanceGate';
const footer = (filtered: boolean) => ({ filtered, included: null, redacted: null, total: null, gate: null });

async function gatedWorld(t: { after(fn: () => unknown): void }) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-gates-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const paths = writeAllFormats(root, 'clearance', CLEARANCE_ROWS);
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, {
    name: 'mini-clearance',
    platform: 'file',
    properties: { path: paths.csv },
  });
  return { gw, admin, urn, paths };
}

test('gate binding: PUT/GET/DELETE on the percent-encoded URN, validation, owner and native realm', async (t) => {
  const { gw, admin, urn } = await gatedWorld(t);
  const path = `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`;
  assert.deepEqual((await gw.request('GET', path, { token: admin })).json.detail.reason, 'not_configured');
  const put = await gw.request('PUT', path, {
    token: admin,
    json: { type: CLEARANCE_GATE, config: { classification_field: 'classification' } },
  });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual(put.json, {
    dataset_urn: urn,
    type: CLEARANCE_GATE,
    config: { classification_field: 'classification' },
    gate_name: 'clearance_gate',
    kind: 'attribute',
  });
  assert.deepEqual((await gw.request('GET', path, { token: admin })).json, put.json);
  const dataset = await gw.request('GET', `/api/catalog/datasets/by-urn?urn=${encodeURIComponent(urn)}`, {
    token: admin,
  });
  assert.deepEqual(dataset.json.properties.gate, {
    type: CLEARANCE_GATE,
    config: { classification_field: 'classification' },
  });

  const alias = await gw.request('PUT', path, {
    token: admin,
    json: { type: 'acme_gates.mini_clearance_gate.MiniClearanceGate', config: {} },
  });
  assert.equal(
    alias.json.config.classification_field,
    'classification',
    'the upstream class path is an alias; the default field applies',
  );
  const cases: [unknown, number, string][] = [
    [{ type: 'platform.gates.default.AllowAllExecutionGate' }, 400, 'wrong_kind'],
    [{ type: 'os.system' }, 403, 'classpath_not_allowed'],
    [{ type: 'acme_gates.mini_access_tier_gate.MiniAccessTierGate' }, 404, 'classpath_unimportable'],
    [{ type: CLEARANCE_GATE, config: { field: 'x' } }, 400, 'gate_config_invalid'],
  ];
  for (const [body, status, reason] of cases) {
    const res = await gw.request('PUT', path, { token: admin, json: body });
    assert.equal(res.status, status, res.text);
    assert.equal(res.json.detail.reason, reason);
  }
  const viewer = await gw.userToken('viewer-only');
  grantViewer(gw, urn, viewer.id);
  assert.equal(
    (await gw.request('PUT', path, { token: viewer.token, json: { type: CLEARANCE_GATE } })).json.detail.reason,
    'rebac_denied',
  );
  const stranger = await gw.userToken('stranger');
  assert.equal((await gw.request('GET', path, { token: stranger.token })).json.detail.reason, 'dataset_not_found');
  const unknownUrn = 'urn:li:dataset:(urn:li:dataPlatform:file,nope,PROD)';
  const unknown = `/api/catalog/datasets/${encodeURIComponent(unknownUrn)}/gate`;
  assert.equal((await gw.request('GET', unknown, { token: admin })).status, 404);
  assert.deepEqual((await gw.request('DELETE', path, { token: admin })).json, { dataset_urn: urn, deleted: true });
  assert.equal((await gw.request('DELETE', path, { token: admin })).json.detail.reason, 'not_configured');
});

test(
  'clearance U/S/TS callers get exactly 3/4/5 rows with ' + 'gate_audit.filtered true/true/false on every seam',
  async (t) => {
    const { gw, admin, urn } = await gatedWorld(t);
    const path = `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`;
    assert.equal(
      (
        await gw.request('PUT', path, {
          token: admin,
          json: { type: CLEARANCE_GATE, config: { classification_field: 'classification' } },
        })
      ).status,
      200,
    );
    const personas = [
      { name: 'clr-u', attributes: { clearance: 'U' }, rows: 3, filtered: true },
      { name: 'clr-s', attributes: { clearance: ' s ' }, rows: 4, filtered: true },
      { name: 'clr-ts', attributes: { clearance: 'TS' }, rows: 5, filtered: false },
      { name: 'clr-none', attributes: {}, rows: 3, filtered: true },
      { name: 'clr-bogus', attributes: { clearance: 'COSMIC' }, rows: 3, filtered: true },
    ];
    for (const persona of personas) {
      const user = await gw.userToken(persona.name, { attributes: persona.attributes });
      grantViewer(gw, urn, user.id);
      const expected = CLEARANCE_ROWS.slice(0, persona.rows);
      const inline = await createJob(gw, user.token, { dataset_urn: urn });
      assert.deepEqual(inline.inline.data, expected, persona.name);
      assert.deepEqual(inline.inline.metadata, { gate_audit: footer(persona.filtered), filtered: persona.filtered });

      const sse = await readSse(
        gw,
        (await createJob(gw, user.token, { dataset_urn: urn, transport: 'sse' })).job_id,
        user.token,
      );
      assert.deepEqual(sseRows(sse), expected);
      for (const chunk of sse.events.filter((e) => e.event === 'chunk'))
        assert.deepEqual(chunk.data.metadata.gate_audit, footer(persona.filtered));
      assert.deepEqual(sse.events.at(-1)?.data.metadata, {
        filtered: persona.filtered,
        gate_audit: footer(persona.filtered),
      });

      const grpc = await readGrpc(
        gw,
        await createJob(gw, user.token, {
          dataset_urn: urn,
          transport: 'grpc',
          grpc_protocol: V1,
          columns: ['id', 'payload'],
        }),
      );
      assert.deepEqual(
        grpcRows(grpc),
        expected.map((r) => ({ id: r.id, payload: r.payload })),
        'the gate reads its field even when the caller does not select it',
      );
      assert.deepEqual(JSON.parse(grpc.chunks[0]?.metadata.gate_audit ?? 'null'), footer(persona.filtered));
    }
  },
);

test('a row with an unrecognized classification is withheld even from TS', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-gates-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const rows = [...CLEARANCE_ROWS, { id: 'r6', classification: 'CONFIDENTIAL', payload: 'unknown-foxtrot' }];
  const paths = writeAllFormats(root, 'odd', rows);
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, { name: 'odd', platform: 'file', properties: { path: paths.parquet } });
  await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`, {
    token: admin,
    json: { type: CLEARANCE_GATE },
  });
  const ts = await gw.userToken('ts', { attributes: { clearance: 'TS' } });
  grantViewer(gw, urn, ts.id);
  const job = await createJob(gw, ts.token, { dataset_urn: urn });
  assert.deepEqual(job.inline.data, CLEARANCE_ROWS);
  assert.equal(job.inline.metadata.gate_audit.filtered, true);
});

test("rows without the gate's field are withheld, and no error names a field the caller did not", async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-gates-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const paths = writeAllFormats(
    root,
    'unlabelled',
    CLEARANCE_ROWS.map((row) => Object.fromEntries(Object.entries(row).filter(([key]) => key !== 'classification'))),
  );
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const ts = await gw.userToken('ts', { attributes: { clearance: 'TS' } });
  for (const [format, path] of Object.entries(paths)) {
    const urn = await createDataset(gw, admin, {
      name: `unlabelled-${format}`,
      platform: 'file',
      properties: { path },
    });
    await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`, {
      token: admin,
      json: { type: CLEARANCE_GATE },
    });
    grantViewer(gw, urn, ts.id);
    for (const columns of [undefined, ['id'], ['id', 'payload']]) {
      const job = await createJob(gw, ts.token, { dataset_urn: urn, columns });
      assert.deepEqual([job.inline.data, job.inline.metadata.gate_audit], [[], footer(true)], `${format} ${columns}`);
    }
    const sse = await readSse(
      gw,
      (await createJob(gw, ts.token, { dataset_urn: urn, transport: 'sse', columns: ['payload'] })).job_id,
      ts.token,
    );
    assert.deepEqual([sseRows(sse), sse.events.at(-1)?.data.metadata.gate_audit], [[], footer(true)], format);
    if (format === 'jsonl') continue; // schemaless: a column it lacks reads as null (docs/retrieval.md)
    for (const [body, column] of [
      [{ columns: ['id', 'nope'] }, 'nope'],
      [{ columns: ['id', 'classification'] }, 'classification'],
      [{ filters: { classification: 'U' } }, 'classification'],
    ] as const) {
      const res = await gw.request('POST', '/api/retrieval/jobs', {
        token: ts.token,
        json: { dataset_urn: urn, ...body },
      });
      assert.deepEqual(
        [res.status, res.json.detail.reason, res.json.detail.column],
        [422, 'unknown_column', column],
        `${format} ${JSON.stringify(body)}`,
      );
    }
  }
});
