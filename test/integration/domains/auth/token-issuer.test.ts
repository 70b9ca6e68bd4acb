/**
 * The token issuer outlives a restart: on `httpsPort` 0 the port changes
 * every start, and a PAT signed before must still be accepted after; with
 * an external URL configured, the issuer is that URL's realm path. In
 * both cases the discovery document names the same issuer as the tokens.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { TEST_ENGINE } from '../../../helpers/engine.ts';
import { startTestGateway, TestGateway } from '../../../helpers/gateway.ts';

test('a PAT issued on port 0 still works after a restart on a new port', async (t) => {
  const first = await startTestGateway(t);
  const created = await first.request('POST', '/api/auth/pats', {
    token: await first.adminToken(),
    json: { name: 'survivor' },
  });
  assert.equal(created.status, 200, created.text);
  const pat = created.json.token as string;
  const issuer = decodeJwt(pat).iss;
  await first.stop();

  const second = new TestGateway(first.dataDir, first.overrides);
  t.after(() => second.stop().catch(() => {}));
  await second.start();
  assert.notEqual(second.port, first.port, 'port 0 picked another port');
  const me = await second.request('GET', '/api/auth/users/me', { token: pat });
  assert.equal(me.status, 200, me.text);
  assert.equal(me.json.username, 'admin');
  const discovery = await second.request('GET', '/api/auth/.well-known/openid-configuration');
  assert.equal(discovery.json.issuer, issuer, 'discovery names the issuer the PAT carries');
  assert.equal(discovery.json.token_endpoint, `${second.url}/api/auth/token`, 'endpoints follow the live port');
  await second.stop();
});

test('with an external URL configured, the issuer is its realm path', async (t) => {
  const gw = await startTestGateway(t, { externalUrl: 'https://localhost:9443' });
  const discovery = await gw.request('GET', '/api/auth/.well-known/openid-configuration');
  assert.equal(discovery.json.issuer, 'https://localhost:9443/api/auth');
  assert.equal(decodeJwt(await gw.adminToken()).iss, discovery.json.issuer);
});

test('the first start chooses the issuer: a later fixed port or hostname keeps it', async (t) => {
  const first = await startTestGateway(t);
  const issuer = decodeJwt(await first.adminToken()).iss;
  await first.stop();
  const again = new TestGateway(first.dataDir, {
    ...first.overrides,
    httpsPort: first.port,
    hostnames: ['gateway.localhost', 'localhost'],
  });
  t.after(() => again.stop().catch(() => {}));
  await again.start();
  const discovery = await again.request('GET', '/api/auth/.well-known/openid-configuration');
  assert.equal(discovery.json.issuer, issuer);
  assert.equal(decodeJwt(await again.adminToken()).iss, issuer);
});

test('an empty or malformed issuer file stops the start with a clear message; the written file is whole', async (t) => {
  const first = await startTestGateway(t);
  await first.adminToken();
  await first.stop();
  const file = join(first.dataDir, 'issuer');
  assert.match(readFileSync(file, 'utf8'), /^urn:meshgate:cluster:[0-9a-f-]{36}\n$/);
  assert.deepEqual(
    readdirSync(first.dataDir).filter((name) => name.startsWith('issuer')),
    ['issuer'],
    'no temporary file is left behind',
  );
  const chosen = readFileSync(file, 'utf8');
  for (const content of ['', '\n', 'not an issuer\n', 'http://plain.example/api/auth\n']) {
    writeFileSync(file, content);
    const again = new TestGateway(first.dataDir, first.overrides);
    if (TEST_ENGINE === 'postgres') {
      // The cluster identity (sealed in the database) restores the node's damaged copy before anything reads it.
      await again.start();
      await again.stop();
      assert.equal(readFileSync(file, 'utf8'), chosen, JSON.stringify(content));
      continue;
    }
    await assert.rejects(
      again.start(),
      /holds no token issuer \(expected an https URL or urn:meshgate:cluster:<uuid>\)/,
      JSON.stringify(content),
    );
  }
});
