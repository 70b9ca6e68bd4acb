/**
 * The API document a started gateway serves, checked from outside: an independent, maintained validator
 * (openapi-spec-validator, scripts/peers/openapi-validator.sh) accepts it as OpenAPI 3.1; every operationId
 * is unique (what client generators name their methods after); and every successful JSON answer states its
 * shape, so no answer is a bare `{type: object}` a client can make nothing of.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { peerScript } from '../../../helpers/peers/process.ts';
import { workersScratch } from '../../../helpers/workers.ts';

type Schema = Record<string, unknown>;
type Operation = { operationId: string; responses: Record<string, { content?: Record<string, { schema: Schema }> }> };
type Document = { paths: Record<string, Record<string, Operation>> };

/**
 * The successful JSON answers still documented as a bare object, each `METHOD path` with why. The list only
 * shrinks: an entry whose answer has been given a schema fails the test until it is removed here.
 */
const UNSTATED: Record<string, string> = {
  'POST /cluster/remote/pair': 'the signed peer protocol between gateways (docs/federation.md), not a client API',
  'POST /cluster/remote/ping': 'the signed peer protocol between gateways (docs/federation.md), not a client API',
  'POST /cluster/remote/disconnect': 'the signed peer protocol between gateways (docs/federation.md), not a client API',
  'POST /cluster/federations/{id}/pair': "the pairing report (the record and both sides' facts) has no schema yet",
  'POST /cluster/federations/{id}/diagnose': 'the layer-by-layer route report (RouteReport) has no schema yet',
  'POST /cluster/federations/preflight': 'the route reports of every address have no schema yet',
  'POST /cluster/federations/resolve-address': 'the resolution (ip, fqdn, source, error) has no schema yet',
};

/** An object schema that says nothing: no properties, no value schema, no combinator, no reference. */
function isBare(schema: Schema): boolean {
  if (schema.type !== 'object') return false;
  const properties = Object.keys((schema.properties ?? {}) as Schema);
  const values = schema.additionalProperties;
  const saysValues = values !== undefined && values !== true && Object.keys(values as Schema).length > 0;
  const structure = ['patternProperties', 'anyOf', 'oneOf', 'allOf', '$ref', 'required'].some((key) => key in schema);
  return properties.length === 0 && !saysValues && !structure;
}

test('the served document is valid OpenAPI 3.1, names each operation once and states every answer', async (t) => {
  const validator = await peerScript('openapi-validator');
  const { dir, serve } = workersScratch(t, 'meshgate-openapi-');
  const served = await serve(1, {}, join(dir, 'data'));
  const dispatcher = new Agent({ connect: { ca: served.ca } });
  t.after(() => dispatcher.close());
  const res = await request(`${served.base}/api/openapi.json`, { dispatcher });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'application/json');
  const text = await res.body.text();
  const file = join(dir, 'openapi.json');
  writeFileSync(file, text);

  const run = await promisify(execFile)(validator, ['--schema', '3.1', '--validation-errors', 'all', file]).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? -1,
      stdout: `${error.stdout ?? ''}${error.stderr ?? ''}`,
    }),
  );
  assert.equal(run.code, 0, run.stdout.slice(-20_000));
  assert.match(run.stdout, /: OK$/m);

  const doc = JSON.parse(text) as Document;
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
  );
  assert.ok(operations.length > 100, `only ${operations.length} operations`);
  const ids = operations.map(({ op }) => op.operationId);
  assert.deepEqual(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    [],
    'operationIds are unique',
  );

  const bare: string[] = [];
  for (const { name, op } of operations) {
    for (const [status, response] of Object.entries(op.responses)) {
      const schema = response.content?.['application/json']?.schema;
      if (!status.startsWith('2') || !schema) continue;
      const items = schema.type === 'array' ? (schema.items as Schema) : undefined;
      if (isBare(schema) || (items && isBare(items))) bare.push(name);
    }
  }
  assert.deepEqual(bare.sort(), Object.keys(UNSTATED).sort(), 'successful JSON answers documented as a bare object');
});
