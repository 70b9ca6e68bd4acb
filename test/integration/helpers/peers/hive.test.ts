import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startHive } from '../../../helpers/peers/hive.ts';

test('hive peer: a real HiveServer2 answers HiveQL over Thrift (hive-driver) on an external table', async (t) => {
  const started = performance.now();
  const hive = await startHive(t);
  t.diagnostic(`hiveserver2 started in ${Math.round(performance.now() - started)} ms on ${hive.host}:${hive.port}`);
  writeFileSync(join(hive.dataDir, 'rows.csv'), '1,one,U\n2,two,S\n3,three,TS\n');
  await hive.query(
    `CREATE EXTERNAL TABLE items (id INT, name STRING, classification ` +
      `STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS ` +
      `TEXTFILE LOCATION 'file://${hive.dataDir}'`,
  );
  const rows = await hive.query('SELECT id, name, classification FROM items');
  assert.deepEqual(
    rows.sort((a, b) => Number(a.id) - Number(b.id)),
    [
      { id: 1, name: 'one', classification: 'U' },
      { id: 2, name: 'two', classification: 'S' },
      { id: 3, name: 'three', classification: 'TS' },
    ],
  );
  assert.deepEqual(await hive.query("SELECT name FROM items WHERE classification = 'S'"), [{ name: 'two' }]);
  assert.deepEqual(await hive.query('SHOW TABLES'), [{ tab_name: 'items' }]);
  await assert.rejects(hive.query('SELECT * FROM missing_table'), { message: /Table not found 'missing_table'/ });
});
