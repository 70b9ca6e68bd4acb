/**
 * The declared attribute vocabulary (docs/attributes.md)
 * through a real gateway: declare, list, get, deprecate, withdraw, revive;
 * what each state does to subject writes and to the claims tokens carry,
 * down to the clearance gate.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { createDataset, createJob, grantViewer } from '../../../helpers/retrieval.ts';
import { CLEARANCE_ROWS, writeAllFormats } from '../../../helpers/retrieval-fixtures.ts';

const SCHEMA = '/api/cluster/attribute-schema';
const DECLARE = { type: 'string', sensitive: false, authority: 'local_admin', schema_version: '1.0' };
const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());

test(
  'declare is idempotent for one shape, refuses another, and lists; ' + 'reading is open, writing is native admin',
  async (t) => {
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const created = await gw.request('PUT', `${SCHEMA}/clearance`, { token: admin, json: DECLARE });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(
      { ...created.json, declared_at: typeof created.json.declared_at, declared_by: typeof created.json.declared_by },
      {
        name: 'clearance',
        ...DECLARE,
        state: 'declared',
        declared_at: 'string',
        deprecated_at: null,
        withdrawn_at: null,
        declared_by: 'string',
      },
    );
    const again = await gw.request('PUT', `${SCHEMA}/clearance`, { token: admin, json: { type: 'string' } });
    assert.deepEqual([again.status, again.json], [200, created.json], 'defaults make the same shape; nothing changes');
    const conflict = await gw.request('PUT', `${SCHEMA}/clearance`, {
      token: admin,
      json: { ...DECLARE, type: 'int', sensitive: true },
    });
    assert.deepEqual(
      [conflict.status, conflict.json.detail.reason, conflict.json.detail.fields],
      [400, 'attribute_shape_conflict', ['type', 'sensitive']],
    );

    await gw.request('PUT', `${SCHEMA}/country`, { token: admin, json: { type: 'string[]' } });
    const user = await gw.userToken('reader');
    const list = await gw.request('GET', SCHEMA, { token: user.token });
    assert.deepEqual(
      [list.status, list.json.schema_version, list.json.attributes.map((a: { name: string }) => a.name)],
      [200, 'v0.3.6', ['clearance', 'country']],
    );
    assert.deepEqual((await gw.request('GET', `${SCHEMA}/clearance`, { token: user.token })).json, created.json);

    const refused: [string, string, unknown, number, string][] = [
      ['PUT', `${SCHEMA}/clearance`, DECLARE, 403, 'admin_required'],
      ['DELETE', `${SCHEMA}/clearance`, undefined, 403, 'admin_required'],
    ];
    for (const [method, path, json, status, reason] of refused) {
      const res = await gw.request(method, path, { token: user.token, json });
      assert.deepEqual([res.status, res.json.detail.reason], [status, reason], `${method} as a user`);
    }
    const reserved = await gw.request('PUT', `${SCHEMA}/roles`, { token: admin, json: DECLARE });
    assert.deepEqual([reserved.status, reserved.json.detail.reason], [422, 'attribute_name_reserved']);
    // Validation failures are problem lists naming what was wrong.
    const bad: [string, unknown, string[]][] = [
      [`${SCHEMA}/${encodeURIComponent('x y')}`, DECLARE, ['path']],
      [`${SCHEMA}/level`, { type: 'float' }, ['body', 'type']],
      [`${SCHEMA}/level`, { type: 'int', authority: 'anyone' }, ['body', 'authority']],
    ];
    for (const [path, json, loc] of bad) {
      const res = await gw.request('PUT', path, { token: admin, json });
      assert.deepEqual([res.status, res.json.detail[0].loc], [422, loc], `${path} ${JSON.stringify(json)}`);
    }
    assert.equal(
      (await gw.request('GET', `${SCHEMA}/level`, { token: admin })).json.detail.reason,
      'attribute_not_found',
      'nothing was written',
    );
    assert.equal(
      (await gw.request('DELETE', `${SCHEMA}/nope`, { token: admin })).json.detail.reason,
      'attribute_not_found',
    );
  },
);

test(
  'declared types check new values; deprecated and withdrawn names take ' + 'none; values already held are kept',
  async (t) => {
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    for (const [name, type] of [
      ['clearance', 'string'],
      ['level', 'int'],
      ['cleared', 'bool'],
      ['country', 'string[]'],
    ]) {
      await gw.request('PUT', `${SCHEMA}/${name}`, { token: admin, json: { type } });
    }
    const put = (attributes: Record<string, unknown>) =>
      gw.request('PUT', '/api/authz/subjects/dora', { token: admin, json: { attributes } });
    const good = {
      clearance: 'S',
      level: 3,
      cleared: true,
      country: ['GBR', 'FRA'],
      team: 'undeclared names are open',
    };
    assert.equal((await put(good)).status, 201);
    for (const wrong of [
      { clearance: 3 },
      { level: 1.5 },
      { level: '3' },
      { cleared: 'yes' },
      { country: 'GBR' },
      { country: [1] },
    ]) {
      const res = await put({ ...good, ...wrong });
      assert.deepEqual(
        [res.status, res.json.detail.reason, res.json.detail.name],
        [400, 'attribute_value_invalid', Object.keys(wrong)[0]],
        JSON.stringify(wrong),
      );
    }
    assert.deepEqual(
      (await gw.request('GET', '/api/authz/subjects/dora', { token: admin })).json.attributes,
      good,
      'no refused write changed anything',
    );

    const deprecated = await gw.request('DELETE', `${SCHEMA}/level`, { token: admin });
    assert.deepEqual(deprecated.json, { name: 'level', state: 'deprecated', subjects_holding_value: 1 });
    assert.equal((await gw.request('GET', `${SCHEMA}/level`, { token: admin })).json.state, 'deprecated');
    assert.deepEqual(
      (await gw.request('GET', `${SCHEMA}?include_deprecated=false`, { token: admin })).json.attributes.map(
        (a: { name: string }) => a.name,
      ),
      ['clearance', 'cleared', 'country'],
    );
    assert.equal((await put({ ...good, clearance: 'TS' })).status, 200, 'a held deprecated value may stay as it is');
    const changed = await put({ ...good, level: 4 });
    assert.deepEqual(
      [changed.status, changed.json.detail.reason, changed.json.detail.state],
      [400, 'attribute_not_declared', 'deprecated'],
    );
    const fresh = await gw.request('PUT', '/api/authz/subjects/newcomer', {
      token: admin,
      json: { attributes: { level: 1 } },
    });
    assert.equal(fresh.json.detail.reason, 'attribute_not_declared');
    assert.equal(
      (await gw.request('GET', '/api/authz/subjects/newcomer', { token: admin })).status,
      404,
      'the refused subject was not created',
    );
    const retyped = await gw.request('PUT', `${SCHEMA}/level`, { token: admin, json: { type: 'string' } });
    assert.deepEqual(
      [retyped.status, retyped.json.detail.reason],
      [400, 'attribute_shape_conflict'],
      'a deprecated name keeps the type its holders have',
    );
    const revived = await gw.request('PUT', `${SCHEMA}/level`, { token: admin, json: { type: 'int' } });
    assert.equal((await put({ ...good, cleared: null })).status, 200, 'null clears a value in any state');
    assert.deepEqual([revived.status, revived.json.state, revived.json.deprecated_at], [200, 'declared', null]);
    assert.equal((await put({ ...good, level: 4 })).status, 200);
  },
);

test(
  'sensitive and withdrawn attributes never reach a token, ' +
    'X-User-Attributes or a gate; withdraw needs force while held',
  async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'meshgate-attrs-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
    const admin = await gw.adminToken();
    const urn = await createDataset(gw, admin, {
      name: 'clearance',
      platform: 'file',
      properties: { path: writeAllFormats(root, 'c', CLEARANCE_ROWS).csv },
    });
    await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(urn)}/gate`, {
      token: admin,
      json: { type: 'platform.gates.clearance.ClearanceGate' },
    });
    await gw.request('PUT', `${SCHEMA}/clearance`, { token: admin, json: { type: 'string' } });
    await gw.request('PUT', `${SCHEMA}/badge`, { token: admin, json: { type: 'string', sensitive: true } });
    await gw.request('PUT', '/api/authz/subjects/tess', {
      token: admin,
      json: { attributes: { clearance: 'TS', badge: 'B-1' }, password: 'tess-password' },
    });
    const tess = await gw.request('GET', '/api/authz/subjects/tess', { token: admin });
    grantViewer(gw, urn, tess.json.id);
    const rows = async (token: string) => (await createJob(gw, token, { dataset_urn: urn })).inline.data.length;

    const token = await gw.login('tess', 'tess-password');
    assert.deepEqual(
      [claims(token).clearance, 'badge' in claims(token)],
      ['TS', false],
      'a sensitive attribute is stored, not issued',
    );
    assert.deepEqual(tess.json.attributes, { clearance: 'TS', badge: 'B-1' });
    const pat = (await gw.request('POST', '/api/auth/pats', { token, json: { name: 'p' } })).json.token as string;
    assert.deepEqual((await gw.request('GET', '/api/auth/users/me', { token: pat })).json.attributes, {
      clearance: 'TS',
    });
    assert.equal(await rows(token), 5);

    const held = await gw.request('DELETE', `${SCHEMA}/clearance?force=false&subjects_holding_value=0`, {
      token: admin,
    });
    assert.deepEqual(
      [held.status, held.json.detail.reason, held.json.detail.subjects_holding_value],
      [409, 'attribute_in_use', 1],
    );
    assert.equal(
      (await gw.request('GET', `${SCHEMA}/clearance`, { token: admin })).json.state,
      'declared',
      'a refused withdraw changes nothing',
    );
    const withdrawn = await gw.request('DELETE', `${SCHEMA}/clearance?force=true&subjects_holding_value=1`, {
      token: admin,
    });
    assert.deepEqual(withdrawn.json, {
      name: 'clearance',
      state: 'withdrawn',
      subjects_holding_value: 1,
      forced: true,
    });
    // The PAT is a live handle: its next use already lacks the claim; a new token never has it; the gate floors to U.
    assert.deepEqual((await gw.request('GET', '/api/auth/users/me', { token: pat })).json.attributes, {});
    const after = await gw.login('tess', 'tess-password');
    assert.equal('clearance' in claims(after), false);
    assert.equal(await rows(after), 3);
    assert.deepEqual(
      (await gw.request('GET', '/api/authz/subjects/tess', { token: admin })).json.attributes,
      { clearance: 'TS', badge: 'B-1' },
      'values stay stored',
    );

    const retyped = await gw.request('PUT', `${SCHEMA}/clearance`, { token: admin, json: { type: 'int' } });
    assert.deepEqual(
      [retyped.status, retyped.json.detail.reason, retyped.json.detail.subjects_holding_other_type],
      [400, 'attribute_shape_conflict', 1],
      'a revived name keeps a type its held values have',
    );
    const shift = await gw.request('PUT', '/api/authz/subjects/tess', {
      token: admin,
      json: { attributes: { clearance: 'TS', badge: 'B-1', shift: 'night' } },
    });
    assert.equal(shift.status, 200, 'an undeclared name takes any value');
    const misfit = await gw.request('PUT', `${SCHEMA}/shift`, { token: admin, json: { type: 'int' } });
    assert.deepEqual(
      [misfit.status, misfit.json.detail.reason],
      [400, 'attribute_shape_conflict'],
      'a first declaration must fit the values already held',
    );
    await gw.request('PUT', `${SCHEMA}/clearance`, { token: admin, json: { type: 'string' } });
    assert.equal(await rows(await gw.login('tess', 'tess-password')), 5, 'revived: issued again');
  },
);
