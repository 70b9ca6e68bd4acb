/**
 * Request counts of several processes summed in one table: each adds only
 * what it counted since its last flush, a failed write keeps the counts for
 * the next one, and a removed deployment (or a label that is no deployment)
 * is skipped. Over a real migrated SQLite.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createDeploymentStore, type DeploymentStore } from '../../../../domains/serving/store.ts';
import { RequestCounts } from '../../../../domains/serving/traffic.ts';
import { openDatabase } from '../../../../gateway/db/open.ts';
import { deploymentRow } from '../../../helpers/deployments.ts';

test('two processes add their own requests once each; a failed write keeps them; removed ones are skipped', (t) => {
  const { sqlite, db } = openDatabase(':memory:');
  t.after(() => sqlite.close());
  const store = createDeploymentStore(db);
  for (const id of ['a', 'b']) store.insert(deploymentRow(id));
  const [one, two] = [new RequestCounts(), new RequestCounts()];
  const requests = () => Object.fromEntries(store.traffic().map((r) => [r.deploymentId, r.requests]));

  for (let i = 0; i < 3; i++) one.cell('a').total++;
  two.cell('a').total += 2;
  two.cell('frontend').total++;
  one.flushTo(store, '2026-01-01T00:00:01.000Z');
  two.flushTo(store, '2026-01-01T00:00:02.000Z');
  assert.deepEqual(requests(), { a: 5 });
  assert.equal(one.unflushed('a'), 0);
  one.flushTo(store, '2026-01-01T00:00:03.000Z');
  assert.deepEqual(requests(), { a: 5 }, 'nothing new, nothing added');

  one.cell('b').total += 4;
  const failing: DeploymentStore = {
    ...store,
    addTraffic() {
      throw new Error('database is locked');
    },
  };
  assert.throws(() => one.flushTo(failing, '2026-01-01T00:00:04.000Z'), /locked/);
  assert.equal(one.unflushed('b'), 4, 'kept for the next flush');
  one.flushTo(store, '2026-01-01T00:00:05.000Z');
  assert.deepEqual(requests(), { a: 5, b: 4 });
  assert.equal(store.traffic('b')[0]?.lastRequestAt, '2026-01-01T00:00:05.000Z');

  one.cell('b').total++;
  assert.ok(store.delete('b'));
  assert.deepEqual(requests(), { a: 5 }, 'the count goes with the deployment');
  one.flushTo(store, '2026-01-01T00:00:06.000Z');
  assert.deepEqual(requests(), { a: 5 }, 'a removed deployment is not brought back');
});
