/**
 * Deployment visibility for mesh callers (remote model
 * listing answers 403 unless the receiver granted a model relation; admin
 * bypass never applies to mesh principals), over a real migrated SQLite.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deploymentInput } from '../../../../domains/serving/input.ts';
import { ApiError } from '../../../../gateway/errors/api-error.ts';
import type { Principal } from '../../../../gateway/principal.ts';
import { memoryDeployments } from '../../../helpers/deployments.ts';

const admin: Principal = {
  userId: 'u-admin',
  username: 'admin',
  email: null,
  roles: ['admin'],
  attributes: {},
  tenantId: '__default__',
  source: 'local',
  authMethod: 'jwt',
};
const meshAdmin: Principal = {
  ...admin,
  userId: 'u-mesh',
  username: 'remote-admin',
  source: 'mesh',
  authMethod: 'mesh',
  externalId: 'x@y',
};

test(
  'a mesh caller without a model relation is refused the listing (403 ' + 'rebac_denied), even with the admin role',
  async (t) => {
    const { authz, service, close } = memoryDeployments();
    t.after(close);
    const input = (kind: string, name: string) => deploymentInput.parse({ kind, name, upstream: 'http://127.0.0.1:9' });
    const model = await service.create(admin, input('model', 'm'));
    await service.create(admin, input('app', 'a'));
    assert.throws(
      () => service.list(meshAdmin),
      (error: unknown) => error instanceof ApiError && error.status === 403 && error.reason === 'rebac_denied',
    );
    await assert.rejects(() => service.create(meshAdmin, input('tool', 't')), /admin_required/);
    authz.write([
      {
        subject: { namespace: 'user', id: meshAdmin.userId },
        relation: 'viewer',
        object: { namespace: 'model', id: model.id },
      },
    ]);
    assert.deepEqual(
      service.list(meshAdmin).map((d) => [d.id, 'upstream' in d]),
      [[model.id, false]],
    );
    assert.equal(service.resolveFor(meshAdmin, 'model', model.id)?.id, model.id);
    assert.equal(service.resolveFor(admin, 'app', model.id), null, 'a model id does not resolve under apps');
  },
);
