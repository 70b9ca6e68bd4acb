/**
 * Route-level gates of the federation API (contract
 * header decision 4): every management route is native admin or refuses
 * mesh principals; only the peer protocol is anonymous (PSK-signed).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AllowlistService } from '../../../../domains/federation/allowlist.ts';
import { allowlistRoutes } from '../../../../domains/federation/allowlist-routes.ts';
import type { FederationContext } from '../../../../domains/federation/context.ts';
import { peerRoutes } from '../../../../domains/federation/peer-routes.ts';
import { federationRoutes } from '../../../../domains/federation/routes.ts';
import type { FederationService } from '../../../../domains/federation/service.ts';
import { loadConfig } from '../../../../gateway/config/load.ts';
import type { RequestContext } from '../../../../gateway/http/context.ts';
import { createAuthorizeStage } from '../../../../gateway/pipeline/stages/authorize.ts';
import type { Principal } from '../../../../gateway/principal.ts';

const routes = [
  ...federationRoutes(
    { ctx: {} as FederationContext, service: {} as FederationService, allowlist: {} as AllowlistService },
    1024,
  ),
  ...allowlistRoutes({} as AllowlistService, 1024),
];

const meshAdmin: Principal = {
  userId: crypto.randomUUID(),
  username: 'remote-admin',
  email: null,
  roles: ['admin'],
  attributes: {},
  tenantId: '__default__',
  source: 'mesh',
  authMethod: 'mesh',
  externalId: 'remote-admin@c',
};

test('every management route needs a credential and refuses mesh-forwarded callers', () => {
  for (const route of routes) {
    assert.ok(route.auth === 'admin' || (route.auth === 'user' && route.nativeOnly), `${route.method} ${route.path}`);
    const stage = createAuthorizeStage(route.auth, route.nativeOnly ?? false);
    assert.throws(
      () => stage.run({ principal: meshAdmin } as RequestContext),
      (e: { reason?: string }) => e.reason === 'endpoint_requires_native_realm',
      `${route.method} ${route.path}`,
    );
  }
  assert.deepEqual(
    routes.filter((r) => r.auth !== 'admin').map((r) => r.path),
    ['/cluster/federations/:id/ping'],
  );
});

test('only the peer protocol is anonymous at the route level', () => {
  const peer = peerRoutes({} as FederationContext);
  assert.deepEqual(
    peer.map((r) => [r.method, r.path, r.auth]),
    [
      ['POST', '/cluster/remote/pair', 'none'],
      ['POST', '/cluster/remote/ping', 'none'],
      ['POST', '/cluster/remote/disconnect', 'none'],
    ],
  );
});

test('federation policy settings come from PLATFORM_* env vars', () => {
  const config = loadConfig({
    env: {
      PLATFORM_ALLOW_UNTRUSTED_FEDERATION: 'true',
      PLATFORM_TRUSTED_SHARED_ISSUERS: 'https://a.test/r, https://b.test/r',
    },
  });
  assert.equal(config.federation.allowUntrustedFederation, true);
  assert.deepEqual(config.federation.trustedSharedIssuers, ['https://a.test/r', 'https://b.test/r']);
  assert.equal(loadConfig({ env: {} }).federation.allowUntrustedFederation, false);
  assert.throws(
    () => loadConfig({ env: { PLATFORM_ALLOW_UNTRUSTED_FEDERATION: 'maybe' } }),
    /PLATFORM_ALLOW_UNTRUSTED_FEDERATION/,
  );
});
