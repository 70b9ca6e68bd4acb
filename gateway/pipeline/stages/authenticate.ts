/**
 * authenticate: the credential a request presents → Principal, through the Authenticator the auth domain provides.
 * The credential is the `Authorization: Bearer` token (a JWT or PAT), else the platform session cookie where the
 * route takes it (plan.ts, SessionUse): on API routes only from a page of the gateway's own origin, on the mounts a
 * browser navigates to as sent, a stale one there counting as none (the mount then asks the browser to sign in).
 * This is the one place a request's credential is read and verified. Compiled only onto routes that take one.
 */

import type { Counter } from 'prom-client';
import { ApiError } from '../../errors/api-error.ts';
import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import { bearerOf } from '../../http/credential.ts';
import { fromOwnOrigin, sameOriginHandshake, sessionCookieValue } from '../../http/session-cookie.ts';
import type { AuthMode } from '../../module.ts';
import type { Authenticator, Principal } from '../../principal.ts';
import type { SessionUse } from '../plan.ts';
import { isThenable, type Stage, type StageResult } from '../stage.ts';

/** Refused credentials by reason: the authenticator's registered reasons, and `credential_missing`. */
export const AUTH_FAILURES = {
  name: 'auth_failures_total',
  help: 'Requests refused at authentication, by reason (credential_missing when none was presented).',
  labels: ['reason'],
} as const;

/** A browser's session cookie; on a websocket handshake only from a page of the origin it reaches (else refused). */
function browserSession(ctx: RequestContext, origin: () => string): string | null {
  const cookie = sessionCookieValue(ctx.req.headers.cookie);
  if (cookie === null || ctx.upgrade === null) return cookie;
  const encrypted = (ctx.req.socket as { encrypted?: boolean }).encrypted === true;
  if (sameOriginHandshake(ctx.req.headers, origin(), encrypted)) return cookie;
  throw GatewayErrors.make.cross_origin_session();
}

/** The session cookie of an API request from the gateway's own origin; a cookie sent from anywhere else is refused. */
function apiSession(ctx: RequestContext, mode: Exclude<AuthMode, 'none'>, origin: () => string): string | null {
  const cookie = sessionCookieValue(ctx.req.headers.cookie);
  if (cookie === null || fromOwnOrigin(ctx.method, ctx.req.headers, origin())) return cookie;
  if (mode === 'optional') return null;
  throw GatewayErrors.make.cross_origin_session();
}

export interface AuthenticateOptions {
  /** Counts refused credentials (AUTH_FAILURES). */
  failures?: Counter<'reason'> | undefined;
  /** Where the session cookie stands in for a bearer (default: nowhere). */
  session?: SessionUse | undefined;
  /** The configured origin: `api` session use, and the websocket handshakes of `browser` use. */
  origin?: (() => string) | undefined;
}

export function createAuthenticateStage(
  mode: Exclude<AuthMode, 'none'>,
  authenticator: Authenticator,
  { failures, session = 'none', origin = () => '' }: AuthenticateOptions = {},
): Stage {
  const refused = (error: unknown): never => {
    failures?.labels(error instanceof ApiError ? error.reason : 'error').inc();
    throw error;
  };
  const admit = (ctx: RequestContext, principal: Principal, credential: string): StageResult => {
    ctx.principal = principal;
    ctx.bearer = credential;
    return 'continue';
  };
  /** A browser's stale cookie: no credential, its reason kept for the 401 the mount may answer. */
  const setAside = (ctx: RequestContext, error: unknown): StageResult => {
    if (!(error instanceof ApiError)) throw error;
    ctx.credentialRefused = error.reason;
    return 'continue';
  };
  const verify = (ctx: RequestContext, credential: string, stale: (error: unknown) => StageResult) => {
    let principal: Principal | Promise<Principal>;
    try {
      principal = authenticator.authenticate(credential);
    } catch (error) {
      return stale(error);
    }
    if (isThenable(principal)) return Promise.resolve(principal).then((p) => admit(ctx, p, credential), stale);
    return admit(ctx, principal, credential);
  };
  /** The session cookie where the route takes one (an API route's only from the gateway's own pages), or null. */
  const cookieOf = (ctx: RequestContext): string | null => {
    if (session === 'browser') return browserSession(ctx, origin);
    return session === 'api' ? apiSession(ctx, mode, origin) : null;
  };
  const staleCookie = session === 'browser' && mode === 'optional';
  return {
    name: 'authenticate',
    // Synchronous when the credential is answered from the verified-token cache (most requests).
    run(ctx: RequestContext): StageResult | Promise<StageResult> {
      // meshVerify already admitted a signed mesh request as its brokered principal.
      if (ctx.meshPeer) return 'continue';
      const bearer = bearerOf(ctx.req.headers);
      if (bearer !== null) return verify(ctx, bearer, refused);
      const cookie = cookieOf(ctx);
      if (cookie !== null) return verify(ctx, cookie, staleCookie ? (error) => setAside(ctx, error) : refused);
      if (mode === 'optional') return 'continue';
      failures?.labels('credential_missing').inc();
      throw GatewayErrors.make.not_authenticated();
    },
  };
}
