/**
 * authenticate: `Authorization: Bearer <JWT or PAT>` → Principal, through
 * the Authenticator the auth domain provides. On API routes a request
 * without a bearer may instead carry the platform session cookie (the
 * operator console is such a client), accepted only from the gateway's own
 * origin (gateway/http/session-cookie.ts).
 * Compiled only onto routes that take credentials.
 */

import type { Counter } from 'prom-client';
import { ApiError } from '../../errors/api-error.ts';
import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import { fromOwnOrigin, sessionCookieValue } from '../../http/session-cookie.ts';
import type { AuthMode } from '../../module.ts';
import type { Authenticator, Principal } from '../../principal.ts';
import { isThenable, type Stage, type StageResult } from '../stage.ts';

export function bearerOf(ctx: RequestContext): string | null {
  const header = ctx.req.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? (match[1] as string) : null;
}

/** Refused credentials by reason: the authenticator's registered reasons, and `credential_missing`. */
export const AUTH_FAILURES = {
  name: 'auth_failures_total',
  help: 'Requests refused at authentication, by reason (credential_missing when none was presented).',
  labels: ['reason'],
} as const;

/** The session cookie of a request from the gateway's own origin; a cookie sent from anywhere else is refused. */
function sessionOf(ctx: RequestContext, mode: Exclude<AuthMode, 'none'>, origin: () => string): string | null {
  const cookie = sessionCookieValue(ctx.req.headers.cookie);
  if (cookie === null || fromOwnOrigin(ctx.method, ctx.req.headers, origin())) return cookie;
  if (mode === 'optional') return null;
  throw GatewayErrors.make.cross_origin_session();
}

export interface AuthenticateOptions {
  /** Counts refused credentials (AUTH_FAILURES). */
  failures?: Counter<'reason'> | undefined;
  /** The configured origin, given only for API routes, where the session cookie may stand in for a bearer. */
  sessionOrigin?: (() => string) | undefined;
}

export function createAuthenticateStage(
  mode: Exclude<AuthMode, 'none'>,
  authenticator: Authenticator,
  { failures, sessionOrigin }: AuthenticateOptions = {},
): Stage {
  const refused = (error: unknown): never => {
    failures?.labels(error instanceof ApiError ? error.reason : 'error').inc();
    throw error;
  };
  const admit = (ctx: RequestContext, principal: Principal, bearer: string): StageResult => {
    ctx.principal = principal;
    ctx.bearer = bearer;
    return 'continue';
  };
  return {
    name: 'authenticate',
    // Synchronous when the credential is answered from the verified-token cache (most requests).
    run(ctx: RequestContext): StageResult | Promise<StageResult> {
      // meshVerify already admitted a signed mesh request as its brokered principal.
      if (ctx.meshPeer) return 'continue';
      const bearer = bearerOf(ctx) ?? (sessionOrigin ? sessionOf(ctx, mode, sessionOrigin) : null);
      if (bearer === null) {
        if (mode === 'optional') return 'continue';
        failures?.labels('credential_missing').inc();
        throw GatewayErrors.make.not_authenticated();
      }
      let principal: Principal | Promise<Principal>;
      try {
        principal = authenticator.authenticate(bearer);
      } catch (error) {
        return refused(error);
      }
      if (isThenable(principal)) return Promise.resolve(principal).then((p) => admit(ctx, p, bearer), refused);
      return admit(ctx, principal, bearer);
    },
  };
}
