/**
 * Secret references bound to one secret and re-authorized at use, through
 * the catalog's DATASETS and SECRETS services of a real gateway (the
 * retrieval path over a real PostgreSQL is retrieval/sources/postgres/secret-binding):
 * value updates are followed, re-creations never; the dataset owner's right
 * to the secret is checked at every use; forged bound forms do not help.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { USER_DIRECTORY } from '../../../../domains/auth/index.ts';
import { boundSecretReference } from '../../../../domains/catalog/urn.ts';
import type { Principal } from '../../../../gateway/principal.ts';
import {
  createDataset,
  datasetService,
  grant,
  meshPrincipal,
  secretId,
  secretsAccess,
} from '../../../helpers/catalog.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

const REFUSED = 'refused: secret_unavailable';

const local = (user: { id: string }, roles: string[] = []): Principal => ({
  ...meshPrincipal(user.id, roles),
  source: 'local',
  authMethod: 'jwt',
});

async function secret(gw: TestGateway, token: string, body: Record<string, unknown>, clobber = false): Promise<string> {
  const res = await gw.request('POST', `/api/catalog/secrets/?clobber=${clobber}`, { token, json: body });
  assert.equal(res.status, 201, res.text);
  return res.json;
}

const pgDataset = (gw: TestGateway, token: string, name: string, properties: Record<string, unknown>) =>
  createDataset(gw, token, { name, platform: 'postgres', properties });

const patch = (gw: TestGateway, token: string, urn: string, json: Record<string, unknown>) =>
  gw.request('PATCH', `/api/catalog/datasets/v2/${urn}`, { token, json });

/** What a use of the dataset gets for `pick(properties)`: the secret's value, or the refusal's reason. */
type Pick = (properties: Record<string, unknown>) => unknown;

function valueInUse(gw: TestGateway, principal: Principal, urn: string, pick: Pick = (p) => p.password): string {
  try {
    return secretsAccess(gw).reveal(pick(datasetService(gw).forUse(principal, urn).properties) as string);
  } catch (error) {
    return `refused: ${(error as { reason?: string }).reason}`;
  }
}

test('a value update (clobber) is followed; ownership moving away stops the use', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const bob = await gw.userToken('bob');
  const alice = await gw.userToken('alice');
  // A secret an admin made for bob: "shared" with him by naming him owner.
  const urn = await secret(gw, admin, { name: 'shared', value: 'v1', owner: 'urn:li:corpuser:bob' });
  const id = secretId(gw, urn);
  const dataset = await pgDataset(gw, bob.token, 'd', { password: urn });
  assert.equal(valueInUse(gw, local(bob), dataset), 'v1');
  await secret(gw, admin, { name: 'shared', value: 'v2' }, true);
  assert.equal(secretId(gw, urn), id, 'a value update keeps the id');
  assert.equal(valueInUse(gw, local(bob), dataset), 'v2', 'the dataset follows the update');
  await secret(gw, bob.token, { name: 'shared', value: 'v3' }, true);
  assert.equal(valueInUse(gw, local(bob), dataset), 'v3');
  // The admin gives the secret to alice: bob's access is revoked, and so is his dataset's.
  await secret(gw, admin, { name: 'shared', value: 'v3', owner: 'urn:li:corpuser:alice' }, true);
  assert.equal(secretId(gw, urn), id);
  assert.equal(valueInUse(gw, local(bob), dataset), REFUSED);
  assert.equal(valueInUse(gw, local(alice), dataset), 'refused: catalog_dataset_not_found', 'needs the dataset');
  gw.gateway.deps.services.get(USER_DIRECTORY).update(alice.id, { roles: ['admin'] });
  assert.equal(valueInUse(gw, local(alice, ['admin']), dataset), REFUSED, "the owner's right counts, not the reader's");
  const rewrite = await patch(gw, bob.token, dataset, { properties: { password: urn } });
  assert.equal(rewrite.status, 200, 'a reference already present keeps its binding on a write');
  assert.equal(valueInUse(gw, local(bob), dataset), REFUSED, 'and stays refused');
});

test("the dataset owner's admin role or account going away stops the use of secrets it bound", async (t) => {
  const gw = await startTestGateway(t);
  const users = gw.gateway.deps.services.get(USER_DIRECTORY);
  const alice = await gw.userToken('alice');
  const carol = await gw.userToken('carol', { roles: ['admin'] });
  const urn = await secret(gw, alice.token, { name: 'alice-pg', value: 'alice-pw' });
  const dataset = await pgDataset(gw, carol.token, 'd', { password: urn });
  grant(gw, alice.id, 'viewer', dataset);
  assert.equal(valueInUse(gw, local(alice), dataset), 'alice-pw', 'an admin owner may use any secret');
  users.update(carol.id, { roles: [] });
  assert.equal(valueInUse(gw, local(alice), dataset), REFUSED, "carol's admin role is checked at use");
  users.update(carol.id, { roles: ['admin'] });
  assert.equal(valueInUse(gw, local(alice), dataset), 'alice-pw');
  users.update(carol.id, { disabled: true });
  assert.equal(valueInUse(gw, local(alice), dataset), REFUSED, 'a disabled owner');
  users.update(carol.id, { disabled: false });
  users.delete(carol.id);
  assert.equal(valueInUse(gw, local(alice), dataset), REFUSED, 'a deleted owner');
});

test('a reference without a binding (migrated, secret gone) is refused until the owner writes it again', async (t) => {
  const gw = await startTestGateway(t);
  const bob = await gw.userToken('bob');
  const urn = await secret(gw, bob.token, { name: 'pg', value: 'bob-pw' });
  const properties = { nested: [{ password: urn }] };
  const dataset = await pgDataset(gw, bob.token, 'd', properties);
  gw.gateway.deps.sql.prepare('DELETE FROM catalog_dataset_secrets WHERE dataset_urn = ?').run(dataset);
  const nested = (p: Record<string, unknown>) => (p as typeof properties).nested[0]?.password;
  assert.equal(valueInUse(gw, local(bob), dataset, nested), REFUSED);
  assert.equal((await patch(gw, bob.token, dataset, { description: 'x' })).status, 200);
  assert.equal(valueInUse(gw, local(bob), dataset, nested), REFUSED, 'a write leaving properties alone binds nothing');
  const rewrite = await patch(gw, bob.token, dataset, { properties });
  assert.deepEqual(rewrite.json.properties, properties, 'reads show the reference as written');
  assert.equal(valueInUse(gw, local(bob), dataset, nested), 'bob-pw', 'writing the properties again binds them');
});

test('SECRETS.reveal takes only a bound reference; a bound form forged in properties binds nothing', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const bob = await gw.userToken('bob');
  const adminUrn = await secret(gw, admin, { name: 'root', value: 'root-pw' });
  const adminId = secretId(gw, adminUrn) as string;
  for (const text of [adminUrn, adminId, `urn:li:dataHubSecret:${adminId}`, `x#${adminId}`]) {
    assert.throws(
      () => secretsAccess(gw).reveal(text),
      (e: Error & { reason?: string }) => e.reason === 'secret_unavailable' && !e.message.includes('root-pw'),
      text,
    );
  }
  const bound = boundSecretReference(adminUrn, adminId);
  assert.equal(secretsAccess(gw).reveal(bound), 'root-pw', 'control: the bound form opens');
  // bob writes the admin secret's bound form himself: no secret has that name.
  const forged = await gw.request('POST', '/api/catalog/datasets/', {
    token: bob.token,
    json: { name: 'forged', platform: 'postgres', properties: { password: bound } },
  });
  assert.equal(forged.status, 403);
  assert.equal(forged.json.detail.reason, 'secret_reference_forbidden');
  // …or names his own secret after it: the catalog appends the id it bound, and the last id is the one read.
  const lookalike = await secret(gw, bob.token, { name: `root#${adminId}`, value: 'bob-pw' });
  assert.equal(lookalike, bound);
  const dataset = await pgDataset(gw, bob.token, 'lookalike', { password: lookalike });
  assert.equal(valueInUse(gw, local(bob), dataset), 'bob-pw');
  assert.ok(!forged.text.includes('root-pw'));
  assert.ok(!gw.logs.join('\n').includes('root-pw'), 'no value in a log line');
});

test(
  'a co-owner blind to the secret keeps it only with the properties ' +
    'unchanged; a re-created secret binds to its writer',
  async (t) => {
    const gw = await startTestGateway(t);
    const bob = await gw.userToken('bob');
    const carol = await gw.userToken('carol');
    const urn = await secret(gw, bob.token, { name: 'pg', value: 'bob-pw' });
    const dataset = await pgDataset(gw, bob.token, 'd', { password: urn });
    grant(gw, carol.id, 'owner', dataset);
    const edit = await patch(gw, carol.token, dataset, { properties: { password: urn, table: 'orders' } });
    assert.deepEqual(
      [edit.status, edit.json.detail?.reason],
      [403, 'secret_reference_forbidden'],
      'kept, with another property changed',
    );
    assert.equal(
      (await patch(gw, carol.token, dataset, { properties: { password: urn } })).status,
      200,
      'kept as it was',
    );
    assert.equal(valueInUse(gw, local(carol), dataset), 'bob-pw', 'bob bound it: a use is authorized against bob');
    assert.equal((await gw.request('DELETE', `/api/catalog/secrets/v2/${urn}`, { token: bob.token })).status, 204);
    assert.equal(await secret(gw, carol.token, { name: 'pg', value: 'carol-pw' }), urn);
    assert.equal(
      valueInUse(gw, local(carol), dataset),
      REFUSED,
      'the binding is dead: the name is never looked up again',
    );
    const rebind = await patch(gw, carol.token, dataset, { properties: { password: urn } });
    assert.equal(rebind.status, 200, 'carol may bind her own secret');
    assert.equal(valueInUse(gw, local(bob), dataset), 'carol-pw', 'carol bound it: a use is authorized against carol');
  },
);
