import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startPostgres } from '../../../helpers/peers/postgres.ts';

test('postgres peer: a throwaway cluster on loopback answers pg and psql with password auth', async (t) => {
  const started = performance.now();
  const db = await startPostgres(t);
  t.diagnostic(`postgres started in ${Math.round(performance.now() - started)} ms on ${db.host}:${db.port}`);
  assert.equal(db.host, '127.0.0.1');

  const client = new pg.Client({ connectionString: db.url });
  const clientErrors: Error[] = [];
  client.on('error', (error) => clientErrors.push(error));
  await client.connect();
  t.after(() => client.end());
  await client.query('CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)');
  await client.query('INSERT INTO items VALUES ($1, $2), ($3, $4)', [1, 'one', 2, 'two']);
  assert.equal(await db.psql('SELECT name FROM items ORDER BY id'), 'one\ntwo', 'psql sees what pg wrote');
  const { rows } = await client.query<{ version: string }>('SELECT version()');
  assert.match(rows[0]?.version ?? '', /^PostgreSQL \d+/);

  const wrong = new pg.Client({ connectionString: db.url.replace(encodeURIComponent(db.password), 'wrong-password') });
  await assert.rejects(wrong.connect(), /password authentication failed/);

  await db.stop();
  await assert.rejects(client.query('SELECT 1'), 'the server is gone after stop()');
  assert.match(String(clientErrors[0]), /terminating connection due to administrator command/);
});
