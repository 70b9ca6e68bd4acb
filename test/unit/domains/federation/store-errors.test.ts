/**
 * A federation record write the database refuses is rethrown without its parameters (the sealed PSK, the key id
 * lookup): drizzle's DrizzleQueryError would print them (`params: …`) in any log line that carries it. The driver's
 * error stays as the cause, with its code, so the refusal is still classified: a second live record of a declared
 * peer is still 409 federation_declared_exists. On the engine of the run.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { createFederationStore, type FederationRow, withoutParams } from '../../../../domains/federation/store.ts';
import { openTestDatabase } from '../../../helpers/engine.ts';

const SEALED = 'v1:sealed-psk-that-no-log-line-may-carry';
const LOOKUP = 'f'.repeat(64);

function row(id: string, declaredAs: string | null): FederationRow {
  const at = new Date().toISOString();
  return {
    id,
    role: 'receiver',
    remoteClusterName: 'peer',
    remoteIps: [],
    callbackHostname: null,
    localClusterId: 'local',
    remoteClusterId: null,
    remoteFederationId: null,
    status: 'WAITING',
    statusReason: null,
    declaredAs,
    lastActivity: null,
    lastPing: null,
    createdAt: at,
    createdBy: 'test',
    updatedAt: at,
    pskEnc: SEALED,
    pskKeyId: LOOKUP,
    remoteCaPem: null,
    peerKcIssuerUrl: null,
    peerKcJwksUrl: null,
    peerBrokerClientId: null,
    peerBrokerClientSecretUrn: null,
    localKc: null,
    brokeringEnabled: true,
    sharedIssuerUrl: null,
    sharedJwksUrl: null,
    sharedCaPem: null,
    requirePeerJwt: null,
    identityMode: 'shared_idp',
    trustPosture: 'receiver_controlled_shared',
    grandfathered: false,
    meshFeatures: [],
  };
}

/** The error `write` throws, checked to carry no parameter anywhere in its chain, and its driver code. */
function refusal(write: () => void): { error: Error; code: unknown } {
  let caught: unknown;
  assert.throws(() => {
    try {
      write();
    } catch (error) {
      caught = error;
      throw error;
    }
  });
  const shown = inspect(caught, { depth: 10 });
  for (const secret of [SEALED, LOOKUP, 'params:']) assert.ok(!shown.includes(secret), `${secret} in ${shown}`);
  let code: unknown;
  for (let e = caught as { code?: unknown; cause?: unknown } | undefined; e && code === undefined; e = e.cause as never)
    code = e.code;
  return { error: caught as Error, code };
}

test('a refused write carries no parameter, and keeps the driver code that classifies it', async (t) => {
  const { db } = await openTestDatabase(t);
  const store = createFederationStore(db, () => {});
  store.insert(row('one', 'peer-a'));

  const duplicate = refusal(() => store.insert(row('one', null)));
  assert.match(String(duplicate.code), /^(SQLITE_CONSTRAINT_PRIMARYKEY|23505)$/);

  const declared = refusal(() => store.insert(row('two', 'peer-a')));
  assert.equal((declared.error as { reason?: string }).reason, 'federation_declared_exists');

  const notNull = refusal(() => store.update('one', { role: null as never, pskEnc: SEALED, pskKeyId: LOOKUP }));
  assert.match(String(notNull.code), /^(SQLITE_CONSTRAINT_NOTNULL|23502)$/);
  assert.equal(store.get('one')?.role, 'receiver', 'nothing was written');
});

test("drizzle's query error loses its parameters and keeps its query, driver cause and code", async (t) => {
  const { DrizzleQueryError } = createRequire(import.meta.filename)('drizzle-orm') as {
    DrizzleQueryError: new (query: string, params: unknown[], cause?: Error) => Error;
  };
  const { db } = await openTestDatabase(t);
  const store = createFederationStore(db, () => {});
  store.insert(row('one', null));
  let driver: Error | undefined;
  try {
    store.insert(row('one', null));
  } catch (error) {
    driver = ((error as Error).cause as Error | undefined) ?? (error as Error);
  }
  assert.ok(driver, 'the database refused the duplicate');
  const query = 'insert into "federations" ("id", "psk_enc", "psk_key_id") values (?, ?, ?)';
  const wrapped = new DrizzleQueryError(query, ['one', SEALED, LOOKUP], driver);
  assert.ok(inspect(wrapped, { depth: 10 }).includes(SEALED), "drizzle's own error shows the parameters");
  const bare = refusal(() => {
    throw withoutParams(wrapped);
  });
  assert.equal(bare.error.message, `Failed query: ${query}`);
  assert.equal(bare.error.cause, driver);
  assert.match(String(bare.code), /^(SQLITE_CONSTRAINT_PRIMARYKEY|23505)$/);
});
