/** The admin API of one gateway as the `meshgate federation` subcommands call it (a bearer token, its CA). */
import { BlockList, isIP } from 'node:net';
import { Agent, request } from 'undici';

/** A step that failed with a message for the operator (exit 1), as opposed to a bug (thrown). */
export class StepFailed extends Error {}

/** An admin session against one gateway's API. */
export class Gateway {
  readonly #agent: Agent;
  constructor(
    readonly label: string,
    private readonly url: string,
    private readonly token: string,
    ca: string | undefined,
  ) {
    this.#agent = new Agent(ca ? { connect: { ca } } : {});
  }

  /** `path` below /api/cluster/federations, or from /api when it starts there. */
  async call(method: 'GET' | 'POST', path: string, json?: unknown): Promise<Record<string, any>> {
    const below = path.startsWith('/api/') ? path : `/api/cluster/federations${path}`;
    const res = await request(`${this.url.replace(/\/$/, '')}${below}`, {
      method,
      dispatcher: this.#agent,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: json === undefined ? null : JSON.stringify(json),
    }).catch((error: Error) => {
      throw new StepFailed(`${this.label}: ${method} ${path}: ${error.message}`);
    });
    const body = (await res.body.json().catch(() => ({}))) as Record<string, any>;
    if (res.statusCode >= 300) {
      const detail = body.detail;
      const reason =
        typeof detail === 'object' && detail && 'reason' in detail ? detail.reason : JSON.stringify(detail ?? body);
      throw new StepFailed(`${this.label}: ${method} ${path}: ${res.statusCode} ${reason}`);
    }
    return body;
  }

  close() {
    return this.#agent.close();
  }
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** A host on this machine: plain http to it crosses no network (localhost, 127.0.0.0/8, ::1). */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host.toLowerCase() === 'localhost') return true;
  const family = isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * Why the gateway URL given as `flag` may not carry `secrets` (what the subcommand sends: an admin token, PSKs), or
 * null. Over plain http they are readable and replaceable by anyone on the path (RFC 9110 §4.2.2: https is the scheme
 * whose connection is secured), so they go only over https, or plain http to a loopback host, which crosses no
 * network. Every `meshgate federation` subcommand checks each URL it is given before it reads or sends a secret.
 */
export function urlRefusal(url: string, flag: string, secrets: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${flag} ${url}: not a URL`;
  }
  if (parsed.protocol === 'https:') return null;
  if (parsed.protocol !== 'http:') return `${flag} ${url}: use https://`;
  if (isLoopback(parsed.hostname)) return null;
  return (
    `refusing to send ${secrets} to ${parsed.origin} over plain http (${flag}): ` +
    'use https:// (plain http only to a loopback host)'
  );
}
