/**
 * `meshgate smoke`: after a routing change, prove what must still hold against a
 * running gateway — the home page loads at the origin, /api/ping resolves,
 * a model answers under /runtime/models/<id>/v1, an app opens under
 * /runtime/apps/<id>, and login redirects and logout land on the origin
 * (also when the request carries a forged Host). One line per check, a
 * precise reason on failure (with the routing config's view when a token
 * allows reading it), exit 1 on any failure, `--json` for scripts.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { Agent, buildConnector, type Dispatcher, request } from 'undici';
import { z } from 'zod';
import { requireFlags, UsageError } from '../../gateway/cli/usage.ts';
import { hostOfUrl } from '../../gateway/http/origin.ts';
import type { CliCommand, RouteDef } from '../../gateway/module.ts';

export interface SmokeOptions {
  origin: string;
  ca?: string | undefined;
  token?: string | undefined;
  model?: string | undefined;
  app?: string | undefined;
}

export interface CheckResult {
  check: string;
  status: 'pass' | 'fail' | 'skip';
  detail: string;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Thrown by a check step: the check fails with this message. */
class CheckFailed extends Error {}

const FORGED_HOST = 'smoke-forged-host.invalid';

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

class Probe {
  readonly agent: Agent;
  readonly forged: Agent;
  routing: {
    service_prefixes?: Record<string, string>;
    enabled_services?: Record<string, boolean>;
    base_host?: string;
  } | null = null;

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

  /** "GET path → 404 service_disabled (service=models)" plus what the routing config says about it. */
  explain(path: string, reply: Reply, service?: string): string {
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
    return `GET ${path} → ${reply.status}${reason}${service ? this.routingHint(service, path) : ''}`;
  }

  routingHint(service: string, path: string): string {
    if (!this.routing) return '';
    const prefix = this.routing.service_prefixes?.[service];
    if (this.routing.enabled_services?.[service] === false) return `; routing: enabled_services.${service}=false`;
    if (prefix && prefix !== '/' && !path.startsWith(`${prefix}/`))
      return (
        `; routing: ${service} prefix is '${prefix}', not the ` + `canonical '${path.split('/').slice(0, 3).join('/')}'`
      );
    return '';
  }

  location(reply: Reply): string {
    return String(reply.headers.location ?? '');
  }
}

type Check = (probe: Probe) => Promise<string | null>;

const CHECKS: Record<string, Check> = {
  async home(p) {
    const reply = await p.get('/', { accept: 'text/html' }, false);
    const type = String(reply.headers['content-type'] ?? '');
    if (reply.status !== 200 || !type.startsWith('text/html'))
      throw new CheckFailed(`${p.explain('/', reply, 'frontend')} (${type || 'no content-type'})`);
    return `GET / → 200 ${type.split(';')[0]}`;
  },
  async api_ping(p) {
    const reply = await p.get('/api/ping', {}, false);
    if (reply.status !== 200 || !reply.text.includes('"pong"'))
      throw new CheckFailed(p.explain('/api/ping', reply, 'api'));
    return 'GET /api/ping → 200 pong';
  },
  async base_host(p) {
    if (!p.routing) return null;
    if (p.routing.base_host !== p.opts.origin)
      throw new CheckFailed(`routing base_host is '${p.routing.base_host}', not the origin '${p.opts.origin}'`);
    return `routing base_host = ${p.opts.origin}`;
  },
  async model(p) {
    if (!p.opts.model) return null;
    const path = `/runtime/models/${encodeURIComponent(p.opts.model)}/v1/models`;
    const reply = await p.get(path);
    let listed = false;
    try {
      listed = Array.isArray(JSON.parse(reply.text).data);
    } catch {
      listed = false;
    }
    if (reply.status !== 200 || !listed)
      throw new CheckFailed(
        `${p.explain(path, reply, 'models')}${reply.status === 200 ? ' (no OpenAI model list in the body)' : ''}`,
      );
    return `GET ${path} → 200 model list`;
  },
  async app(p) {
    if (!p.opts.app) return null;
    const path = `/runtime/apps/${encodeURIComponent(p.opts.app)}/`;
    const reply = await p.get(path, { accept: 'text/html' });
    const location = p.location(reply);
    const staysInside = location.startsWith(path) || location.startsWith(`${p.opts.origin}${path}`);
    if (reply.status >= 200 && reply.status < 300) return `GET ${path} → ${reply.status}`;
    if (reply.status >= 300 && reply.status < 400 && staysInside) return `GET ${path} → ${reply.status} to ${location}`;
    throw new CheckFailed(
      `${p.explain(path, reply, 'apps')}${location ? ` (redirects to ${location}, outside the app)` : ''}`,
    );
  },
  async login_redirect(p) {
    const next = p.opts.app ? `/runtime/apps/${encodeURIComponent(p.opts.app)}/` : '/';
    const page = await p.get(`/login?next=${encodeURIComponent(next)}`, { accept: 'text/html' }, false);
    if (page.status !== 200)
      throw new CheckFailed(`${p.explain('/login', page, 'frontend')} (expected the login page)`);
    if (p.opts.app) {
      const anonymous = await p.get(next, { accept: 'text/html' }, false);
      const to = p.location(anonymous);
      if (anonymous.status === 302 && !to.startsWith(`${p.opts.origin}/login?next=`)) {
        throw new CheckFailed(`unauthenticated GET ${next} redirects to '${to}', not to ${p.opts.origin}/login`);
      }
    }
    if (!p.opts.token) return `GET /login → 200 login page (no --token: redirect after login not checked)`;
    for (const [asked, expected] of [
      [next, `${p.opts.origin}${next}`],
      ['https://evil.invalid/', `${p.opts.origin}/`],
    ] as const) {
      const reply = await p.get(`/login?next=${encodeURIComponent(asked)}`, {
        accept: 'text/html',
        host: FORGED_HOST,
        'x-forwarded-host': FORGED_HOST,
      });
      if (reply.status !== 302 || p.location(reply) !== expected) {
        throw new CheckFailed(
          `signed-in GET /login?next=${asked} → ${reply.status} to '${p.location(reply)}', expected ${expected}`,
        );
      }
    }
    return `signed-in /login lands on ${p.opts.origin}${next}; foreign next and forged Host stay on the origin`;
  },
  async logout(p) {
    // Signed out with no session cookie: nothing is ended, only the redirect is checked.
    const reply = await p.get('/logout', { host: FORGED_HOST, 'x-forwarded-host': FORGED_HOST }, false, 'POST');
    const expected = `${p.opts.origin}/`;
    if (reply.status === 303 && p.location(reply) !== expected)
      throw new CheckFailed(`POST /logout → 303 to '${p.location(reply)}', expected 303 to ${expected}`);
    if (reply.status !== 303)
      throw new CheckFailed(`${p.explain('/logout', reply, 'frontend')}, expected 303 to ${expected}`);
    return `POST /logout → 303 ${expected}`;
  },
};

const SKIP_REASON: Record<string, string> = {
  base_host: 'no --token to read /api/config/routing',
  model: 'no --model given and none listed',
  app: 'no --app given and none listed',
};

/** Runs every check in order; never throws for a failed check. */
export async function runSmoke(opts: SmokeOptions): Promise<CheckResult[]> {
  const probe = new Probe({ ...opts, origin: opts.origin.replace(/\/+$/, '') });
  try {
    await discover(probe);
    const results: CheckResult[] = [];
    for (const [check, run] of Object.entries(CHECKS)) {
      try {
        const detail = await run(probe);
        results.push(
          detail === null
            ? { check, status: 'skip', detail: SKIP_REASON[check] ?? '' }
            : { check, status: 'pass', detail },
        );
      } catch (error) {
        if (!(error instanceof CheckFailed)) throw error;
        results.push({ check, status: 'fail', detail: error.message });
      }
    }
    return results;
  } finally {
    await Promise.all([probe.agent.close(), probe.forged.close()]);
  }
}

/** With a token: read the routing config (for precise reasons) and pick a model and an app when none was named. */
async function discover(probe: Probe): Promise<void> {
  if (!probe.opts.token) return;
  const quiet = async (path: string) => {
    try {
      const reply = await probe.get(path);
      return reply.status === 200 ? JSON.parse(reply.text) : null;
    } catch {
      return null;
    }
  };
  probe.routing = await quiet('/api/config/routing');
  for (const kind of ['model', 'app'] as const) {
    if (probe.opts[kind]) continue;
    const listed = await quiet(`/api/serving/deployments?kind=${kind}`);
    if (Array.isArray(listed) && listed[0]?.id) probe.opts[kind] = listed[0].id;
  }
}

const USAGE =
  'meshgate smoke --origin https://host[:port] [--cacert FILE] [--token ' +
  'T | env PLATFORM_TOKEN] [--model ID] [--app ID] [--json]';

function readCa(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(`--cacert: cannot read '${file}' (${why})`);
  }
}

export const smokeCommand: CliCommand = {
  name: 'smoke',
  summary: 'check a running gateway after a routing change',
  usage: USAGE,
  async run(args, env) {
    const { values } = parseArgs({
      args,
      options: {
        origin: { type: 'string' },
        cacert: { type: 'string' },
        token: { type: 'string' },
        model: { type: 'string' },
        app: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
    requireFlags(values, ['origin']);
    const origin = values.origin as string;
    if (!URL.canParse(origin) || new URL(origin).protocol !== 'https:') {
      throw new UsageError(`--origin '${origin}' is not an https:// URL`);
    }
    const results = await runSmoke({
      origin,
      ca: values.cacert ? readCa(values.cacert) : undefined,
      token: values.token ?? process.env.PLATFORM_TOKEN,
      model: values.model,
      app: values.app,
    });
    const ok = results.every((r) => r.status !== 'fail');
    if (values.json) env.out(JSON.stringify({ ok, origin, checks: results }, null, 2));
    else for (const r of results) env.out(`${r.status.toUpperCase().padEnd(4)}  ${r.check.padEnd(14)}  ${r.detail}`);
    return ok ? 0 : 1;
  },
};

/**
 * POST /api/serving/smoke: the same checks, run by the gateway against its
 * own public origin with the caller's credential, so a routing change made
 * in a browser is followed by the proof the CLI would give.
 */
const smokeAnswer = z.object({
  ok: z.boolean(),
  origin: z.string(),
  checks: z.array(z.object({ check: z.string(), status: z.enum(['pass', 'fail', 'skip']), detail: z.string() })),
});

export function smokeRoute(target: { origin: () => string; caPem: () => string }): RouteDef {
  return {
    method: 'POST',
    path: '/serving/smoke',
    auth: 'admin',
    nativeOnly: true,
    doc: {
      summary:
        "Run the smoke checks against the gateway's own origin with the caller's token (ok: false when one fails)",
      answers: { 200: smokeAnswer },
    },
    async handle(ctx) {
      const checks = await runSmoke({ origin: target.origin(), ca: target.caPem(), token: ctx.bearer ?? undefined });
      return { status: 200, body: { ok: checks.every((c) => c.status !== 'fail'), origin: target.origin(), checks } };
    },
  };
}
