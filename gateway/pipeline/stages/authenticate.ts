/**
 * authenticate: `Authorization: Bearer <JWT or PAT>` → Principal, through
 * the Authenticator the auth domain provides.
 * Compiled only onto routes that take credentials.
 */

import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import type { AuthMode } from '../../module.ts';
import type { Authenticator } from '../../principal.ts';
import type { Stage, StageResult } from '../stage.ts';

export function bearerOf(ctx: RequestContext): string | null {
  const header = ctx.req.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? (match[1] as string) : null;
}

export function createAuthenticateStage(mode: Exclude<AuthMode, 'none'>, authenticator: Authenticator): Stage {
  return {
    name: 'authenticate',
    async run(ctx: RequestContext): Promise<StageResult> {
      // meshVerify already admitted a signed mesh request as its brokered principal.
      if (ctx.meshPeer) return 'continue';
      const bearer = bearerOf(ctx);
      if (bearer === null) {
        if (mode === 'optional') return 'continue';
        throw GatewayErrors.make.not_authenticated();
      }
      ctx.principal = await authenticator.authenticate(bearer);
      ctx.bearer = bearer;
      return 'continue';
    },
  };
}
