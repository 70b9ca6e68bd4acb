/**
 * The attack table: named malicious mesh requests from
 * test/fixtures/mesh-attacks.json, each sent straight to a real receiver
 * meshgate (shared_idp, hardened, an allowlisted persona of the real OIDC
 * provider) as a tampered variant of a correctly signed request. Every row
 * states its status and reason; no refusal may mention rebac_denied.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { MESH } from '../../../../gateway/mesh/headers.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';
import { allow, craft, type EnvelopeInput, type MeshPair, sharedIdpMesh } from '../../../helpers/mesh.ts';

interface Row {
  name: string;
  why: string;
  request: {
    method?: string;
    path?: string;
    signMethod?: string;
    signPath?: string;
    sign?: Partial<Record<keyof EnvelopeInput, string | number>>;
    set?: Record<string, string>;
    remove?: string[];
    duplicate?: Record<string, string>;
    extraHeaders?: Record<string, string>;
    manyHeaders?: number;
    sendTwice?: boolean;
    raw?: string;
    json_equals?: Record<string, unknown>;
  };
  expect: { status: number; reason?: string };
}

const rows: Row[] = JSON.parse(readFileSync(new URL('../../../fixtures/mesh-attacks.json', import.meta.url), 'utf8'));
const ME = '/api/auth/users/me';

function pick(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], value);
}

async function rawExchange(gw: TestGateway, text: string): Promise<number> {
  const socket = connect({
    host: '127.0.0.1',
    port: gw.port,
    servername: gw.overrides.hostnames?.[0] as string,
    ca: gw.gateway.caPem,
  });
  await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  socket.end(text);
  let reply = '';
  for await (const chunk of socket) reply += String(chunk);
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0);
}

test('mesh attack table', async (t) => {
  assert.ok(rows.length >= 40, 'at least 40 named attacks');
  const { oidc, pair } = await sharedIdpMesh(t);
  const receiver = pair.receiver;
  const sub = oidc.subjectOf('fed-clr-u');
  const externalId = await allow(pair, sub);
  await allow(pair, oidc.subjectOf('fed-clr-s'));
  const unsignedHeader = Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url');
  const unsignedPayload = Buffer.from(JSON.stringify({ sub, iss: oidc.issuer, exp: 4e9 })).toString('base64url');
  const unsignedJwt = `${unsignedHeader}.${unsignedPayload}.`;
  const values: Record<string, string> = {
    $A: pair.sourceClusterId,
    $B: pair.receiverClusterId,
    $sub: sub,
    $externalId: externalId,
    $otherSub: oidc.subjectOf('fed-clr-s'),
    $token: await oidc.passwordToken('fed-clr-u', 'pw-u'),
    $otherToken: await oidc.passwordToken('fed-clr-s', 'pw-s'),
    $strangerToken: await oidc.passwordToken('fed-stranger', 'pw-x'),
    $foreignToken: await oidc.mintToken({ sub }, { foreignKey: true }),
    $expiredToken: await oidc.mintToken({ sub, iat: 1_000_000, exp: 1_000_300 }),
    $wrongIssToken: await oidc.mintToken({ sub, iss: 'https://evil.test/realms/federation' }),
    $noneToken: unsignedJwt,
    $hsToken: await new SignJWT({ sub, tenant_id: '__default__' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(oidc.issuer)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(oidc.caPem)),
    $receiverNative: await receiver.adminToken(),
    $big: 'x'.repeat(20 * 1024),
    $host: `${receiver.overrides.hostnames?.[0]}:${receiver.port}`,
    $sourceFedId: pair.sourceFedId,
    $receiverFedId: pair.receiverFedId,
  };
  const fill = (s: string) =>
    s.replace(/\$[A-Za-z]+/g, (name) => (name === '$X' ? randomUUID() : (values[name] ?? name)));

  for (const row of rows) {
    await t.test(row.name, async () => {
      const spec = row.request;
      if (spec.raw) {
        assert.equal(await rawExchange(receiver, fill(spec.raw)), row.expect.status, row.why);
        return;
      }
      const res = await send(pair, spec, fill, values);
      assert.equal(res.status, row.expect.status, `${row.why}: ${res.text.slice(0, 300)}`);
      assert.doesNotMatch(res.text, /rebac_denied/);
      assertAnswer(res.json, row, fill);
    });
  }
});

/** The stable reason (a string `detail` or `detail.reason`) and the JSON fields the row names. */
function assertAnswer(json: any, row: Row, fill: (s: string) => string): void {
  if (row.expect.reason) {
    const detail = json?.detail;
    assert.equal(typeof detail === 'string' ? detail : detail?.reason, row.expect.reason, row.why);
  }
  for (const [path, expected] of Object.entries(row.request.json_equals ?? {})) {
    assert.deepEqual(pick(json, path), typeof expected === 'string' ? fill(expected) : expected, `${row.why}: ${path}`);
  }
}

/** The envelope the row signs: the sender's defaults unless the row overrides a field. */
function craftRow(pair: MeshPair, spec: Row['request'], fill: (s: string) => string) {
  const sign = spec.sign ?? {};
  const peerToken = sign.peerToken === 'none' ? undefined : fill(String(sign.peerToken ?? '$token'));
  return craft(pair, spec.signMethod ?? spec.method ?? 'GET', spec.signPath ?? spec.path ?? ME, {
    userId: fill(String(sign.userId ?? '$sub')),
    ...(sign.roles !== undefined ? { roles: fill(String(sign.roles)) } : {}),
    ...(sign.route !== undefined ? { route: fill(String(sign.route)) } : {}),
    ...(peerToken ? { peerToken } : {}),
    ...(sign.userAttributes !== undefined ? { userAttributes: String(sign.userAttributes) } : {}),
    ...(sign.tsOffset !== undefined ? { tsOffset: Number(sign.tsOffset) } : {}),
    ...(sign.psk !== undefined ? { psk: String(sign.psk) } : {}),
    ...(sign.body !== undefined ? { body: Buffer.from(String(sign.body)) } : {}),
  });
}

/** The signed headers as sent, tampered as the row says: removed, replaced, duplicated, added, padded. */
function tamperedHeaders(signed: Record<string, string>, spec: Row['request'], fill: (s: string) => string): string[] {
  const headers: Record<string, string> = { ...signed };
  for (const name of spec.remove ?? []) delete headers[name];
  for (const [name, value] of Object.entries(spec.set ?? {})) headers[name] = fill(value);
  const flat = Object.entries(headers).flat();
  for (const [name, value] of Object.entries(spec.duplicate ?? {})) flat.push(name, fill(value));
  for (const [name, value] of Object.entries(spec.extraHeaders ?? {})) flat.push(name, fill(value));
  for (let i = 0; i < (spec.manyHeaders ?? 0); i++) flat.push(`x-filler-${i}`, 'y');
  return flat;
}

async function send(pair: MeshPair, spec: Row['request'], fill: (s: string) => string, values: Record<string, string>) {
  const crafted = craftRow(pair, spec, fill);
  values.$tsPlus1 = String(Number(crafted.headers[MESH.ts]) + 1);
  values.$sigPrefix = (crafted.headers[MESH.signature] as string).slice(0, 40);
  values.$same = crafted.headers[MESH.signature] as string;
  const flat = tamperedHeaders(crafted.headers, spec, fill);
  const once = async () => {
    const res = await request(`${pair.receiver.gateway.httpsUrl}${spec.path ?? ME}`, {
      method: (spec.method ?? 'GET') as 'GET',
      headers: flat,
      dispatcher: pair.receiver.agent,
    });
    const text = await res.body.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, text, json };
  };
  if (spec.sendTwice) await once();
  return once();
}
