/**
 * The HTTP-01 listener (RFC 8555 §8.3: the CA fetches http://<name>/.well-known/acme-challenge/<token> on port 80).
 * It answers the tokens of pending orders and nothing else: a token is base64url (§8.1), matched against the raw
 * request target, so a percent-encoded, dotted or doubled path never reaches the table; any other challenge path
 * is 404; every other request is redirected to the same path on the gateway's https origin (never to the Host the
 * request named, which is the client's to choose), with nothing else served.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Config } from '../../config/schema.ts';
import { createPlainHttpListener } from '../../http/listeners.ts';

const CHALLENGE_PREFIX = '/.well-known/acme-challenge/';
/** base64url, as RFC 8555 §8.3 has tokens; Let's Encrypt's are 43 characters, 128 leaves room. */
const TOKEN_TARGET = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]{16,128})$/;

/** The key authorizations of the HTTP-01 challenges being validated, by token. */
export class Http01Tokens {
  readonly #byToken = new Map<string, string>();

  set(token: string, keyAuthorization: string): void {
    this.#byToken.set(token, keyAuthorization);
  }

  delete(token: string): void {
    this.#byToken.delete(token);
  }

  get(token: string): string | undefined {
    return this.#byToken.get(token);
  }
}

export function createHttp01Listener(tokens: Http01Tokens, origin: () => string, limits: Config['limits']): Server {
  return createPlainHttpListener(limits, (req, res) => answer(tokens, origin(), req, res));
}

function answer(tokens: Http01Tokens, origin: string, req: IncomingMessage, res: ServerResponse): void {
  const target = req.url ?? '/';
  if (target.startsWith(CHALLENGE_PREFIX) || target.toLowerCase().includes('acme-challenge')) {
    const token = TOKEN_TARGET.exec(target)?.[1];
    const keyAuthorization = token === undefined ? undefined : tokens.get(token);
    if ((req.method === 'GET' || req.method === 'HEAD') && keyAuthorization !== undefined) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : keyAuthorization);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
    res.end('not found\n');
    return;
  }
  // A request target in origin-form starts with '/' (RFC 9112 §3.2.1); anything else (absolute-form, `*`) goes to
  // the root rather than be pasted after the origin.
  const path = target.startsWith('/') && !target.startsWith('//') ? target : '/';
  res.writeHead(308, { location: `${origin}${path}`, 'content-length': '0' });
  res.end();
}
