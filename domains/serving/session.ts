/**
 * Who is calling a runtime URL or a frontend page: the bearer the pipeline
 * already verified, else the platform session cookie a browser carries
 * (set by /login/session). Redirects for browsers always name the
 * configured origin (PLATFORM_ORIGIN: logout and auth redirects return the user to the right origin), never a value
 * taken from the request's Host header.
 *
 * Every 401 it answers is counted in `meshgate_auth_failures_total` as the
 * API's authenticate stage counts one: under the refused credential's reason
 * (a stale session cookie's, or a bearer's on an upgrade, which no stage
 * verified), else `credential_missing`. A refused bearer on a plain request
 * was counted by that stage already.
 */
import type { Counter } from 'prom-client';
import { ApiError } from '../../gateway/errors/api-error.ts';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import type { NodeRequest, Reply, RequestQuery } from '../../gateway/http/context.ts';
import { SESSION_COOKIE, sessionCookieValue } from '../../gateway/http/session-cookie.ts';
import { bearerOf } from '../../gateway/pipeline/stages/authenticate.ts';
import { problemWithPath } from '../../gateway/pipeline/stages/canonical-path.ts';
import type { Authenticator, Principal } from '../../gateway/principal.ts';

interface Caller {
  readonly req: NodeRequest;
  readonly method: string;
  readonly rawPath: string;
  readonly query: RequestQuery;
  readonly principal?: Principal | null;
}

export class RuntimeAuth {
  #origin: { text: string; url: URL } | null = null;
  /** Why a request's session cookie was refused, kept until its 401 is counted (only refused requests are here). */
  readonly #refusedCookies = new WeakMap<NodeRequest, string>();

  constructor(
    private readonly authenticator: Authenticator,
    readonly origin: () => string,
    private readonly sessionTtlSeconds: number,
    private readonly failures: Counter<'reason'>,
  ) {}

  /** The verified bearer principal, else the session cookie's; a stale cookie counts as none. */
  principal(caller: Caller): Principal | null | Promise<Principal | null> {
    if (caller.principal) return caller.principal;
    const bearer = bearerOf(caller as Parameters<typeof bearerOf>[0]);
    if (bearer) return this.authenticator.authenticate(bearer);
    const cookie = sessionCookieValue(caller.req.headers.cookie);
    return cookie ? this.#cookiePrincipal(caller.req, cookie) : null;
  }

  async #cookiePrincipal(req: NodeRequest, cookie: string): Promise<Principal | null> {
    try {
      return await this.authenticator.authenticate(cookie);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.#refusedCookies.set(req, error.reason);
      return null;
    }
  }

  /** The 401 for a caller left without a principal, counted. */
  refusal(caller: Pick<Caller, 'req'>): ApiError {
    this.failures.labels(this.#refusedCookies.get(caller.req) ?? 'credential_missing').inc();
    return GatewayErrors.make.not_authenticated();
  }

  /** `error`, counted when it is a refused credential (a 401): for callers whose bearer only this class verified. */
  counted(error: unknown): unknown {
    if (error instanceof ApiError && error.status === 401) this.failures.labels(error.reason).inc();
    return error;
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
