/**
 * What `meshgate smoke` probes a gateway with: one HTTPS agent (and one that forges Host over a verified
 * connection), the live routing configuration read with the caller's token, and the prefixes, switches and reasons
 * the checks (smoke.ts) draw from it.
 */
import { isIP } from 'node:net';
import { Agent, buildConnector, type Dispatcher, request } from 'undici';
import { z } from 'zod';
import { hostOfUrl } from '../../gateway/http/origin.ts';
import { DEFAULT_PREFIXES } from '../routing/index.ts';

export interface SmokeOptions {
  origin: string;
  ca?: string | undefined;
  token?: string | undefined;
  model?: string | undefined;
  app?: string | undefined;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Thrown by a check step: the check fails with this message. */
export class CheckFailed extends Error {}

/**
 * An agent whose TLS name stays the origin's whatever Host a request carries
 * (undici otherwise derives SNI from Host), so a forged Host reaches the
 * gateway over a verified connection.
 */
export function forgedHostAgent(origin: string, ca: string | undefined): Agent {
  const host = hostOfUrl(origin);
  // SNI carries names only (RFC 6066 §3); for an IP origin the certificate is checked against the address.
  const servername = isIP(host) ? '' : host;
  const connector = buildConnector(ca ? { ca } : {});
  return new Agent({ connect: (options, callback) => connector({ ...options, servername }, callback) });
}

/** The services whose prefix a check builds its paths on. */
type PrefixedService = 'api' | 'models' | 'apps';

/**
 * What smoke reads of GET /api/config/routing (docs/wire.md). A prefix is appended to the origin, so it must be a
 * path: one that is not (`@host/…`) would send the token to another host.
 */
const routingView = z.object({
  base_host: z.string(),
  service_prefixes: z.record(z.string(), z.string().startsWith('/')),
  enabled_services: z.record(z.string(), z.boolean()),
});

/** A check that does not apply: reported as SKIP with this reason. */
export class Skip {
  constructor(readonly reason: string) {}
}

export class Probe {
  readonly agent: Agent;
  readonly forged: Agent;
  /** The live routing configuration; null when it could not be read, for the reason in `routingUnread`. */
  routing: z.output<typeof routingView> | null = null;
  routingUnread = 'no --token to read /api/config/routing';

  constructor(readonly opts: SmokeOptions) {
    this.agent = new Agent({ connect: opts.ca ? { ca: opts.ca } : {} });
    this.forged = forgedHostAgent(opts.origin, opts.ca);
  }

  async get(
    path: string,
    headers: Record<string, string> = {},
    withToken = true,
    method: 'GET' | 'POST' = 'GET',
  ): Promise<Reply> {
    const all = { ...headers, ...(withToken && this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {}) };
    const dispatcher = headers.host ? this.forged : this.agent;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.opts.origin}${path}`, {
        method,
        headers: all,
        dispatcher,
        headersTimeout: 15_000,
        bodyTimeout: 15_000,
      });
    } catch (error) {
      const code = (error as { code?: string }).code;
      const hint = code?.includes('CERT') || code?.includes('SIGNATURE') ? ' (pass the platform CA with --cacert)' : '';
      throw new CheckFailed(`${method} ${path} → connection failed: ${code ?? (error as Error).message}${hint}`);
    }
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  /** A service's live prefix: the routing configuration's, else its default. */
  prefix(service: PrefixedService): string {
    return this.routing?.service_prefixes[service] ?? (DEFAULT_PREFIXES[service] as string);
  }

  /** The named app's path under the live apps prefix; null without an app, or when routing turns apps off. */
  appPath(): string | null {
    if (!this.opts.app || this.disabled('apps')) return null;
    return `${this.prefix('apps')}/${encodeURIComponent(this.opts.app)}/`;
  }

  /** A SKIP when the live routing turns `service` off: its paths then answer 404 service_disabled by design. */
  disabled(service: string): Skip | null {
    if (this.routing?.enabled_services[service] !== false) return null;
    return new Skip(`${service} is disabled in routing (enabled_services.${service}=false)`);
  }

  /** "GET path → 404 route_not_found (…)", and that a default prefix was assumed when it was. */
  explain(path: string, reply: Reply, service?: PrefixedService): string {
    let reason = '';
    try {
      const detail = JSON.parse(reply.text).detail;
      if (typeof detail === 'string') reason = ` ${detail}`;
      else if (detail?.reason) {
        const { reason: r, request_id: _, ...extra } = detail;
        const bits = Object.entries(extra).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
        reason = ` ${r}${bits.length ? ` (${bits.join(', ')})` : ''}`;
      }
    } catch {
      // not JSON: the status says enough
    }
    return `GET ${path} → ${reply.status}${reason}${service ? this.routingHint(service) : ''}`;
  }

  /** Without the routing configuration, a failing path was built on a default prefix that may have moved. */
  routingHint(service: PrefixedService): string {
    if (this.routing) return '';
    return `; routing not read (${this.routingUnread}): the default ${service} prefix was assumed`;
  }

  location(reply: Reply): string {
    return String(reply.headers.location ?? '');
  }
}

/**
 * With a token: read the live routing configuration (the prefixes every check uses, and precise reasons), and pick a
 * model and an app when none was named. The configuration is read under the default api prefix: it is the only
 * address known before it is read.
 */
export async function discover(probe: Probe): Promise<void> {
  if (!probe.opts.token) return;
  const read = async (path: string): Promise<{ json: unknown } | { failed: string }> => {
    try {
      const reply = await probe.get(path);
      return reply.status === 200 ? { json: JSON.parse(reply.text) } : { failed: probe.explain(path, reply) };
    } catch (error) {
      return { failed: `GET ${path}: ${(error as Error).message}` };
    }
  };
  const path = `${DEFAULT_PREFIXES.api as string}/config/routing`;
  const routing = await read(path);
  const parsed = 'json' in routing ? routingView.safeParse(routing.json) : null;
  if (parsed?.success) probe.routing = parsed.data;
  else probe.routingUnread = 'failed' in routing ? routing.failed : `GET ${path}: not a routing configuration`;
  for (const kind of ['model', 'app'] as const) {
    if (probe.opts[kind]) continue;
    const listed = await read(`${probe.prefix('api')}/serving/deployments?kind=${kind}`);
    if ('json' in listed && Array.isArray(listed.json) && listed.json[0]?.id) probe.opts[kind] = listed.json[0].id;
  }
}
