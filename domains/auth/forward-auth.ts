/**
 * Forward authentication: `/api/auth/validate` (alias `/api/auth/forward/validate`) answers 200 with the caller's
 * identity in headers, or 401, so a reverse proxy can put this realm in front
 * of another application: nginx `auth_request`, Traefik `forwardAuth`, Envoy
 * `ext_authz` (HTTP service, which appends the original path to its
 * `path_prefix` and keeps the original method, hence any method and any path
 * below it).
 *
 * - The only credential is `Authorization: Bearer` (an access token or PAT of
 *   this realm). Identity headers a client sends (X-User-*, X-Forwarded-User)
 *   are never read, Basic credentials never reach a password check (so this is
 *   no password oracle), and mesh envelopes are not admitted here.
 * - The token is never echoed: no X-Auth-Token, no Authorization in the answer.
 * - Presented credentials that fail are throttled per client (token buckets as
 *   for logins); behind a trusted proxy the client is the rightmost
 *   X-Forwarded-For address that is not itself a trusted proxy (as nginx's
 *   realip module with `real_ip_recursive on`).
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../gateway/config/schema.ts';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { TrustedProxies } from '../../gateway/http/client-address.ts';
import { clientKey } from '../../gateway/http/client-key.ts';
import type { Reply, RequestContext } from '../../gateway/http/context.ts';
import { bearerOf } from '../../gateway/http/credential.ts';
import type { HttpMethod, RouteDef } from '../../gateway/module.ts';
import type { Authenticator, Principal } from '../../gateway/principal.ts';
import { AuthErrors } from './errors.ts';
import { FailureBuckets } from './throttle.ts';

type ForwardAuthSettings = Config['auth']['forwardAuth'];

const ANY_METHOD: HttpMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** RFC 9110 §5.5: field values are visible ASCII; anything else in a JSON value is written as a \u escape. */
const asciiJson = (value: unknown) =>
  JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** The headers a proxy copies onto the upstream request (nginx `auth_request_set`, Traefik `authResponseHeaders`). */
export function identityHeaders(principal: Principal, requestId: string): Record<string, string> {
  const headers: Record<string, string> = {
    'x-user-id': principal.userId,
    'x-user-name': principal.username,
    'x-forwarded-user': principal.username,
    'x-user-roles': principal.roles.join(','),
    'x-request-id': requestId,
    'cache-control': 'no-store',
  };
  if (principal.email) headers['x-user-email'] = principal.email;
  if (Object.keys(principal.attributes).length > 0) {
    const attributes = asciiJson(principal.attributes);
    headers['x-user-attributes'] = attributes;
    headers['x-user-attributes-hash'] = createHash('sha256').update(attributes).digest('hex');
  }
  return headers;
}

export class ForwardAuth {
  readonly #failures: FailureBuckets;
  readonly #proxies: TrustedProxies;

  constructor(
    private readonly authenticator: Authenticator,
    settings: ForwardAuthSettings,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.#failures = new FailureBuckets(
      settings.failureBurst,
      settings.failureRefillSeconds * 1000,
      settings.trackedClients,
    );
    this.#proxies = new TrustedProxies(settings.trustedProxies);
  }

  /** The client the throttle counts: the socket peer, or what trusted proxies say it forwarded for. */
  clientOf(ctx: RequestContext): string {
    return clientKey(this.#proxies.clientOf(ctx.req));
  }

  async validate(ctx: RequestContext): Promise<Reply> {
    const authorization = ctx.req.headers.authorization;
    // No credential at all is an anonymous visitor, not a guess: 401 without spending the client's budget.
    if (authorization === undefined) throw GatewayErrors.make.not_authenticated();
    const client = this.clientOf(ctx);
    const now = this.nowMs();
    if (this.#failures.level(client, now) < 1)
      throw AuthErrors.make.validation_throttled({ retry_after: this.#failures.retryAfterSeconds(client, now) });
    const bearer = bearerOf(ctx.req.headers);
    try {
      if (bearer === null) throw GatewayErrors.make.not_authenticated();
      return { status: 200, headers: identityHeaders(await this.authenticator.authenticate(bearer), ctx.requestId) };
    } catch (error) {
      this.#failures.fail(client, this.nowMs());
      throw error;
    }
  }

  routes(): RouteDef[] {
    const handle = (ctx: RequestContext) => this.validate(ctx);
    const doc = {
      summary: "Forward auth for a reverse proxy: 200 with the caller's identity in X-User-* headers, or 401",
      answers: { 200: null },
      errors: ['not_authenticated', 'validation_throttled'],
    };
    // `/auth/forward/validate` is the public SDK's name for the same endpoint.
    return ['/auth/validate', '/auth/forward/validate'].flatMap((path): RouteDef[] => [
      { method: ANY_METHOD, path, auth: 'none', doc, handle },
      { method: ANY_METHOD, path: `${path}/*rest`, auth: 'none', doc, handle },
    ]);
  }
}
