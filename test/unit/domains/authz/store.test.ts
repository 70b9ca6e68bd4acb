/**
 * The check index stays coherent with SQLite when a domain writes tuples
 * inside its own transaction that later rolls back (domains/authz/store.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AuthzService } from '../../../../domains/authz/service.ts';
import { createTupleStore } from '../../../../domains/authz/store.ts';
import { localPrincipal } from '../../../helpers/deployments.ts';
import { openTestDatabase } from '../../../helpers/engine.ts';

const alice = localPrincipal('alice');
const d1 = { namespace: 'dataset', id: 'd1' };
const d2 = { namespace: 'dataset', id: 'd2' };
const tick = () => new Promise((resolve) => setImmediate(resolve));

test('writes and deletes inside a rolled-back outer transaction leave no trace in the index', async (t) => {
  const { sql: sqlite } = await openTestDatabase(t);
  const authz = new AuthzService(createTupleStore(sqlite), () => new Date());
  authz.grantOwnership(alice, d1);
  const failing = sqlite.transaction(() => {
    authz.grantOwnership(alice, d2);
    authz.deleteObject(d1);
    // Inside the transaction, the index answers what this connection sees.
    assert.equal(authz.check(alice, 'owner', d2), true);
    assert.equal(authz.check(alice, 'owner', d1), false);
    throw new Error('the domain write failed');
  });
  assert.throws(failing, /domain write failed/);
  await tick();
  assert.equal(authz.check(alice, 'owner', d2), false, 'rolled-back grant is gone');
  assert.equal(authz.check(alice, 'owner', d1), true, 'rolled-back delete is undone');

  sqlite.transaction(() => authz.grantOwnership(alice, d2))();
  await tick();
  assert.equal(authz.check(alice, 'viewer', d2), true, 'a committed outer transaction keeps its grant');
  assert.deepEqual([...(authz.visibleIds(alice, 'dataset') as Set<string>)].sort(), ['d1', 'd2']);
});
