/** Header hygiene and path rewriting of the runtime proxy, table-driven. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  downstreamResponseHeaders,
  type PathMap,
  rewriteLocation,
  rewriteSetCookie,
  upstreamRequestHeaders,
  withoutGatewayCookies,
} from '../../../../domains/serving/headers.ts';
import { sessionCookieValue } from '../../../../gateway/http/session-cookie.ts';

const stripped: PathMap = {
  basePath: '',
  prefix: '/runtime/apps/a1',
  stripPrefix: true,
  upstreamOrigin: 'http://10.0.0.5:8080',
};
const based: PathMap = { ...stripped, basePath: '/base' };
const full: PathMap = { ...stripped, stripPrefix: false };

test('Location rewriting keeps the browser under the prefix', async (t) => {
  const rows: { desc: string; map: PathMap; location: string; expect: string }[] = [
    {
      desc: 'absolute path',
      map: stripped,
      location: '/dashboard?x=1#top',
      expect: '/runtime/apps/a1/dashboard?x=1#top',
    },
    { desc: 'root', map: stripped, location: '/', expect: '/runtime/apps/a1/' },
    {
      desc: 'absolute URL on the upstream',
      map: stripped,
      location: 'http://10.0.0.5:8080/login?next=%2F',
      expect: '/runtime/apps/a1/login?next=%2F',
    },
    { desc: 'relative path is already under the prefix', map: stripped, location: 'next/page', expect: 'next/page' },
    { desc: 'scheme-relative URL is foreign', map: stripped, location: '//evil.example/x', expect: '//evil.example/x' },
    {
      desc: 'another origin is left alone',
      map: stripped,
      location: 'https://idp.example/auth',
      expect: 'https://idp.example/auth',
    },
    {
      desc: 'lookalike origin is left alone',
      map: stripped,
      location: 'http://10.0.0.5:80800/x',
      expect: 'http://10.0.0.5:80800/x',
    },
    { desc: 'upstream base path is replaced', map: based, location: '/base/items', expect: '/runtime/apps/a1/items' },
    { desc: 'outside the base path stays', map: based, location: '/other', expect: '/other' },
    {
      desc: 'no strip: upstream already speaks public paths',
      map: full,
      location: '/runtime/apps/a1/x',
      expect: '/runtime/apps/a1/x',
    },
  ];
  for (const row of rows)
    await t.test(row.desc, () => assert.equal(rewriteLocation(row.map, row.location), row.expect));
});

test('Set-Cookie: Path moves under the prefix, Domain is dropped, other attributes stay', async (t) => {
  const rows: { desc: string; map: PathMap; cookie: string; expect: string }[] = [
    {
      desc: 'root path → bare prefix',
      map: stripped,
      cookie: 'sid=1; Path=/; HttpOnly',
      expect: 'sid=1; Path=/runtime/apps/a1; HttpOnly',
    },
    {
      desc: 'sub path',
      map: stripped,
      cookie: 'a=b; path=/settings; Secure',
      expect: 'a=b; Path=/runtime/apps/a1/settings; Secure',
    },
    {
      desc: 'domain dropped',
      map: stripped,
      cookie: 'a=b; Domain=upstream.internal; SameSite=Lax',
      expect: 'a=b; SameSite=Lax',
    },
    { desc: 'no path left as is', map: stripped, cookie: 'a=b', expect: 'a=b' },
    { desc: 'base path', map: based, cookie: 'a=b; Path=/base/x', expect: 'a=b; Path=/runtime/apps/a1/x' },
  ];
  for (const row of rows) await t.test(row.desc, () => assert.equal(rewriteSetCookie(row.map, row.cookie), row.expect));
});

const facts = {
  clientIp: '192.0.2.7',
  proto: 'https' as const,
  originHost: 'platform.example:8443',
  originPort: '8443',
  prefix: '/runtime/models/m1',
  requestId: 'req-12345678',
  forwardAuthorization: false,
  user: { username: 'alice', attributes: { clearance: 'secret' } },
};

test('request headers: hop-by-hop, h2 pseudo, forged identity and the session cookie never reach the upstream', () => {
  const out = upstreamRequestHeaders(
    {
      ':method': 'GET',
      ':authority': 'evil.example',
      host: 'evil.example',
      connection: 'keep-alive, x-secret-hop',
      'x-secret-hop': '1',
      'keep-alive': 'timeout=5',
      te: 'gzip',
      'transfer-encoding': 'chunked',
      upgrade: 'h2c',
      'proxy-authorization': 'Basic eA==',
      authorization: 'Bearer platform-token',
      cookie: 'meshgate_session=tok; app=1',
      forwarded: 'for=6.6.6.6',
      'x-forwarded-for': '6.6.6.6',
      'x-kz-mesh-user-id': 'forged',
      'x-user-attributes': '{"clearance":"top"}',
      accept: 'text/event-stream',
      'content-type': 'application/json',
    },
    facts,
  );
  assert.deepEqual(out, {
    accept: 'text/event-stream',
    'content-type': 'application/json',
    cookie: 'app=1',
    'x-forwarded-for': '192.0.2.7',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'platform.example:8443',
    'x-forwarded-port': '8443',
    'x-forwarded-prefix': '/runtime/models/m1',
    'x-request-id': 'req-12345678',
    'x-forwarded-user': 'alice',
    'x-user-attributes': '{"clearance":"secret"}',
  });
  const only = upstreamRequestHeaders(
    { cookie: 'meshgate_session=tok', authorization: 'Bearer t' },
    { ...facts, forwardAuthorization: true, user: null },
  );
  assert.equal(only.cookie, undefined);
  assert.equal(only.authorization, 'Bearer t');
  assert.equal(only['x-forwarded-user'], undefined);
  // `te: trailers` alone crosses (gRPC needs it; RFC 9113 §8.2.2); other TE values are the hop's own.
  assert.equal(upstreamRequestHeaders({ te: 'trailers' }, facts).te, 'trailers');
  assert.equal(upstreamRequestHeaders({ te: 'trailers, deflate' }, facts).te, undefined);
});

test('response headers: hop-by-hop and Connection-named headers are removed, the rest passes', () => {
  const out = downstreamResponseHeaders(
    {
      connection: 'keep-alive, x-internal',
      'x-internal': 'yes',
      'keep-alive': 'timeout=5',
      'transfer-encoding': 'chunked',
      'content-type': 'text/event-stream',
      'set-cookie': ['one=1; Path=/'],
      location: '/next',
    },
    stripped,
  );
  assert.deepEqual(out, {
    'content-type': 'text/event-stream',
    'set-cookie': ['one=1; Path=/runtime/apps/a1'],
    location: '/runtime/apps/a1/next',
  });
});

test("session cookie: the whole value is read, `=` and all; only the gateway's own pairs are withheld", async (t) => {
  const rows: { desc: string; header: string | undefined; value: string | null; upstream: string }[] = [
    {
      desc: 'value with `=` (base64 padding)',
      header: 'meshgate_session=ab=cd==; app=1',
      value: 'ab=cd==',
      upstream: 'app=1',
    },
    {
      desc: 'among others, spaces around',
      header: 'a=1;  meshgate_session=tok ; b=x=y',
      value: 'tok',
      upstream: 'a=1; b=x=y',
    },
    {
      desc: 'space before `=` still names the session',
      header: 'meshgate_session =tok; app=1',
      value: 'tok',
      upstream: 'app=1',
    },
    {
      desc: 'an empty pair gives way to a later one',
      header: 'meshgate_session=; meshgate_session=tok',
      value: 'tok',
      upstream: '',
    },
    { desc: 'percent escapes are not decoded', header: 'meshgate_session=a%3Db', value: 'a%3Db', upstream: '' },
    {
      desc: 'a lookalike name is not the session',
      header: 'meshgate_session_old=x; app=1',
      value: null,
      upstream: 'meshgate_session_old=x; app=1',
    },
    { desc: 'no cookie header', header: undefined, value: null, upstream: '' },
    {
      desc: "the affinity cookie is the gateway's too",
      header: 'app=1; meshgate_affinity=2; meshgate_session=tok',
      value: 'tok',
      upstream: 'app=1',
    },
  ];
  for (const row of rows) {
    await t.test(row.desc, () => {
      assert.equal(sessionCookieValue(row.header), row.value);
      assert.equal(withoutGatewayCookies(row.header ?? ''), row.upstream);
    });
  }
});
