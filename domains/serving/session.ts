/**
 * Who is calling a runtime URL or a frontend page, as the authenticate stage found it: the bearer, else the platform
 * session cookie a browser carries (set by /login/session; a stale one counts as none there). Redirects for
 * browsers always name the configured origin (PLATFORM_ORIGIN: logout and auth redirects return the user to the
 * right origin), never a value taken from the request's Host header.
 *
 * Every 401 it answers is counted in `meshgate_auth_failures_total` as the authenticate stage counts one: under the
 * reason a presented session cookie was set aside for, else `credential_missing`. A refused bearer was counted by
 * that stage already.
 */
import type { Counter } from 'prom-client';
import type { ApiError } from '../../gateway/errors/api-error.ts';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import type { Reply, RequestContext } from '../../gateway/http/context.ts';
import { presentedCredential } from '../../gateway/http/credential.ts';
import { problemWithPath } from '../../gateway/http/path-problem.ts';
import { SESSION_COOKIE } from '../../gateway/http/session-cookie.ts';
import type { Authenticator, Principal } from '../../gateway/principal.ts';

type Caller = Pick<RequestContext, 'req' | 'method' | 'rawPath' | 'query' | 'credentialRefused'>;

export class RuntimeAuth {
  #origin: { text: string; url: URL } | null = null;

  constructor(
    private readonly authenticator: Authenticator,
    readonly origin: () => string,
    private readonly sessionTtlSeconds: number,
    private readonly failures: Counter<'reason'>,
  ) {}

  /**
   * Who the request's credential names now, for the check an open exchange re-runs (and the login page's question
   * whether the browser is signed in already): a mesh-signed request keeps its
   * brokered principal (nothing in it re-derives one); any other presents its bearer, else its cookie, again. Null
   * when neither authenticates any more.
   */
  async current(ctx: Pick<RequestContext, 'req' | 'meshPeer' | 'principal'>): Promise<Principal | null> {
    if (ctx.meshPeer) return ctx.principal;
    const credential = presentedCredential(ctx.req.headers, true);
    if (credential === null) return null;
    try {
      return await this.authenticator.authenticate(credential);
    } catch {
      return null;
    }
  }

  /** The 401 for a caller left without a principal, counted. */
  refusal(caller: Pick<Caller, 'credentialRefused'>): ApiError {
    this.failures.labels(caller.credentialRefused ?? 'credential_missing').inc();
    return GatewayErrors.make.not_authenticated();
  }

  /** A protected resource without credentials: a navigating browser goes to the login page, anything else gets 401. */
  unauthenticated(caller: Caller): Reply {
    const accept = caller.req.headers.accept ?? '';
    if ((caller.method === 'GET' || caller.method === 'HEAD') && accept.includes('text/html')) {
      const query = caller.query.size > 0 ? `?${caller.query}` : '';
      return {
        status: 302,
        headers: { location: this.loginUrl(`${caller.rawPath}${query}`), 'cache-control': 'no-store' },
      };
    }
    throw this.refusal(caller);
  }

  /**
   * The configured origin parsed once (it is fixed after listen), for X-Forwarded-Host/Port on every proxied request.
   */
  originUrl(): URL {
    const text = this.origin();
    if (this.#origin?.text !== text) this.#origin = { text, url: new URL(text) };
    return this.#origin.url;
  }

  loginUrl(next: string): string {
    return `${this.origin()}/login?next=${encodeURIComponent(next)}`;
  }

  /** Same-origin only: a canonical absolute path, or a URL on the configured origin; anything else means home. */
  safeNext(next: string | null): string {
    if (!next) return '/';
    let candidate = next;
    if (!next.startsWith('/')) {
      try {
        const url = new URL(next);
        if (url.origin !== this.origin()) return '/';
        candidate = `${url.pathname}${url.search}`;
      } catch {
        return '/';
      }
    }
    const path = candidate.split(/[?#]/, 1)[0] as string;
    if (candidate.startsWith('//') || problemWithPath(path) !== null) return '/';
    return candidate;
  }

  /** Where a redirect lands: always the configured origin. */
  absolute(path: string): string {
    return `${this.origin()}${path}`;
  }

  sessionCookie(token: string): string {
    return `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${this.sessionTtlSeconds}; Secure; HttpOnly; SameSite=Lax`;
  }

  clearedSessionCookie(): string {
    return `${SESSION_COOKIE}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax`;
  }
}
