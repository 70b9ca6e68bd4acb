/**
 * The one access decision (domains/serving/access.ts) through the registry's
 * proxy lookup, over a real migrated SQLite and the real authz index: every
 * rule, and that nothing remembered outlives a tuple change or a visibility
 * change.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deploymentInput } from '../../../../domains/serving/input.ts';
import type { Principal } from '../../../../gateway/principal.ts';
import { localPrincipal, memoryDeployments } from '../../../helpers/deployments.ts';

const admin = localPrincipal('u-admin', ['admin']);
const owner = localPrincipal('u-owner');
const viewer = localPrincipal('u-viewer');
const stranger = localPrincipal('u-stranger');
const mesh: Principal = {
  ...localPrincipal('u-mesh', ['admin']),
  source: 'mesh',
  authMethod: 'mesh',
  externalId: 'x@peer',
};

test('grants, visibility and credentials decide; revocations and visibility changes hold at once', async (t) => {
  const { authz, service, close } = memoryDeployments();
  t.after(close);
  const create = (body: Record<string, unknown>) => {
    return service.create(admin, deploymentInput.parse({ upstream: 'http://127.0.0.1:9', ...body }));
  };
  const app = await create({ kind: 'app', name: 'a' });
  const model = await create({ kind: 'model', name: 'm' });
  const open = await create({ kind: 'tool', name: 't', requires_auth: false });
  const grant = (who: Principal, relation: string, kind: string, id: string) =>
    authz.write([{ subject: { namespace: 'user', id: who.userId }, relation, object: { namespace: kind, id } }]);
  grant(owner, 'owner', 'app', app.id);
  grant(viewer, 'viewer', 'app', app.id);
  grant(mesh, 'viewer', 'app', app.id);
  grant(mesh, 'viewer', 'model', model.id);
  const sees = (who: Principal | null, kind: 'model' | 'app' | 'tool', id: string) => {
    return service.resolveFor(who, kind, id) !== null;
  };

  const table: [string, Principal | null, 'model' | 'app' | 'tool', string, boolean][] = [
    ['admin', admin, 'app', app.id, true],
    ['owner', owner, 'app', app.id, true],
    ['viewer', viewer, 'app', app.id, true],
    ['stranger', stranger, 'app', app.id, false],
    ['anonymous', null, 'app', app.id, false],
    ['mesh, granted model', mesh, 'model', model.id, true],
    ['mesh, granted app: never an app', mesh, 'app', app.id, false],
    ['mesh, public tool: bypasses nothing', mesh, 'tool', open.id, false],
    ['anonymous, public tool', null, 'tool', open.id, true],
    ['stranger, public tool', stranger, 'tool', open.id, true],
    ['admin, wrong kind', admin, 'model', app.id, false],
  ];
  for (const [name, who, kind, id, expected] of table) assert.equal(sees(who, kind, id), expected, name);

  authz.delete({
    subject: { namespace: 'user', id: viewer.userId },
    relation: 'viewer',
    object: { namespace: 'app', id: app.id },
  });
  assert.equal(sees(viewer, 'app', app.id), false, 'revoked on the next lookup');

  assert.throws(() => service.update(stranger, app.id, { visibility: 'authenticated' }), /deployment_not_found/);
  service.update(owner, app.id, { visibility: 'authenticated' });
  assert.equal(sees(stranger, 'app', app.id), true, 'shared with every native user');
  assert.equal(sees(mesh, 'app', app.id), false, 'but not with mesh callers');
  assert.equal(sees(null, 'app', app.id), false, 'nor with anonymous ones');
  service.update(admin, app.id, { visibility: 'private' });
  assert.equal(sees(stranger, 'app', app.id), false, 'private again on the next lookup');

  await service.remove(admin, app.id);
  assert.deepEqual(authz.list({ objectNs: 'app', objectId: app.id }), [], 'its grants went with it');
});
