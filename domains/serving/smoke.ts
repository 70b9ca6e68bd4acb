/**
 * `meshgate smoke`: after a routing change, prove what must still hold against a
 * running gateway — the home page loads at the origin, <api>/ping resolves,
 * a model answers under <models>/<id>/v1, an app opens under <apps>/<id>,
 * and login redirects and logout land on the origin (also when the request
 * carries a forged Host). The prefixes are the live routing configuration's
 * when a token allows reading it (the defaults otherwise), and a service the
 * configuration turns off is skipped, not failed. One line per check, a
 * precise reason on failure, exit 1 on any failure, `--json` for scripts.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { requireFlags, UsageError } from '../../gateway/cli/usage.ts';
import type { CliCommand, RouteDef } from '../../gateway/module.ts';
import { CheckFailed, discover, Probe, Skip, type SmokeOptions } from './smoke-probe.ts';

export { forgedHostAgent } from './smoke-probe.ts';

export interface CheckResult {
  check: string;
  status: 'pass' | 'fail' | 'skip';
  detail: string;
}

const FORGED_HOST = 'smoke-forged-host.invalid';

interface SmokeCheck {
  /** The routing service the check exercises: skipped when the live routing turns it off. */
  service?: string;
  run(probe: Probe): Promise<string | Skip>;
}

const CHECKS: Record<string, SmokeCheck> = {
  home: {
    service: 'frontend',
    async run(p) {
      const reply = await p.get('/', { accept: 'text/html' }, false);
      const type = String(reply.headers['content-type'] ?? '');
      if (reply.status !== 200 || !type.startsWith('text/html'))
        throw new CheckFailed(`${p.explain('/', reply)} (${type || 'no content-type'})`);
      return `GET / → 200 ${type.split(';')[0]}`;
    },
  },
  api_ping: {
    async run(p) {
      const path = `${p.prefix('api')}/ping`;
      const reply = await p.get(path, {}, false);
      if (reply.status !== 200 || !reply.text.includes('"pong"')) throw new CheckFailed(p.explain(path, reply, 'api'));
      return `GET ${path} → 200 pong`;
    },
  },
  base_host: {
    async run(p) {
      if (!p.routing) return new Skip(p.routingUnread);
      if (p.routing.base_host !== p.opts.origin)
        throw new CheckFailed(`routing base_host is '${p.routing.base_host}', not the origin '${p.opts.origin}'`);
      return `routing base_host = ${p.opts.origin}`;
    },
  },
  model: {
    service: 'models',
    async run(p) {
      if (!p.opts.model) return new Skip('no --model given and none listed');
      const path = `${p.prefix('models')}/${encodeURIComponent(p.opts.model)}/v1/models`;
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
  },
  app: {
    service: 'apps',
    async run(p) {
      const path = p.appPath();
      if (path === null) return new Skip('no --app given and none listed');
      const reply = await p.get(path, { accept: 'text/html' });
      const location = p.location(reply);
      const staysInside = location.startsWith(path) || location.startsWith(`${p.opts.origin}${path}`);
      if (reply.status >= 200 && reply.status < 300) return `GET ${path} → ${reply.status}`;
      if (reply.status >= 300 && reply.status < 400 && staysInside)
        return `GET ${path} → ${reply.status} to ${location}`;
      throw new CheckFailed(
        `${p.explain(path, reply, 'apps')}${location ? ` (redirects to ${location}, outside the app)` : ''}`,
      );
    },
  },
  login_redirect: {
    service: 'frontend',
    async run(p) {
      const app = p.appPath();
      const next = app ?? '/';
      const page = await p.get(`/login?next=${encodeURIComponent(next)}`, { accept: 'text/html' }, false);
      if (page.status !== 200) throw new CheckFailed(`${p.explain('/login', page)} (expected the login page)`);
      if (app) {
        const anonymous = await p.get(app, { accept: 'text/html' }, false);
        const to = p.location(anonymous);
        if (anonymous.status === 302 && !to.startsWith(`${p.opts.origin}/login?next=`)) {
          throw new CheckFailed(`unauthenticated GET ${app} redirects to '${to}', not to ${p.opts.origin}/login`);
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
  },
  logout: {
    service: 'frontend',
    async run(p) {
      // Signed out with no session cookie: nothing is ended, only the redirect is checked.
      const reply = await p.get('/logout', { host: FORGED_HOST, 'x-forwarded-host': FORGED_HOST }, false, 'POST');
      const expected = `${p.opts.origin}/`;
      if (reply.status === 303 && p.location(reply) !== expected)
        throw new CheckFailed(`POST /logout → 303 to '${p.location(reply)}', expected 303 to ${expected}`);
      if (reply.status !== 303) throw new CheckFailed(`${p.explain('/logout', reply)}, expected 303 to ${expected}`);
      return `POST /logout → 303 ${expected}`;
    },
  },
};

/** One check's result: SKIP when its service is off or it does not apply, FAIL with the reason it gave. */
async function runCheck(probe: Probe, check: string, { service, run }: SmokeCheck): Promise<CheckResult> {
  const off = service ? probe.disabled(service) : null;
  if (off) return { check, status: 'skip', detail: off.reason };
  try {
    const outcome = await run(probe);
    return outcome instanceof Skip
      ? { check, status: 'skip', detail: outcome.reason }
      : { check, status: 'pass', detail: outcome };
  } catch (error) {
    if (!(error instanceof CheckFailed)) throw error;
    return { check, status: 'fail', detail: error.message };
  }
}

/** Runs every check in order; never throws for a failed check. */
export async function runSmoke(opts: SmokeOptions): Promise<CheckResult[]> {
  const probe = new Probe({ ...opts, origin: opts.origin.replace(/\/+$/, '') });
  try {
    await discover(probe);
    const results: CheckResult[] = [];
    for (const [check, definition] of Object.entries(CHECKS)) results.push(await runCheck(probe, check, definition));
    return results;
  } finally {
    await Promise.all([probe.agent.close(), probe.forged.close()]);
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
