/**
 * `meshgate deploy ...`: the deployments registry on a gateway's data dir,
 * for scripts and for operators without a token (whoever can read the data
 * dir already holds the keys). A running gateway picks changes up within a
 * second (DeploymentService cache).
 */
import { parseArgs } from 'node:util';
import { requireFlags, UsageError } from '../../gateway/cli/usage.ts';
import { ApiError } from '../../gateway/errors/api-error.ts';
import { validate } from '../../gateway/http/body.ts';
import type { CliCommand, CliEnv } from '../../gateway/module.ts';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import { deploymentInput, deploymentPatch } from './input.ts';
import { DEPLOYMENTS, type DeploymentKind, type DeploymentService } from './service.ts';

const USAGE = `meshgate deploy add --kind model|app|tool --name <name> --upstream http://host:port[/base][=weight]
                   [--upstream <another replica>]... [--affinity cookie] [--retries <n>] [--max-concurrent <n>]
                   [--queue-timeout-ms <ms>] [--rate-limit <requests per second>[:<burst>]]
                   [--timeout <seconds>] [--no-strip-prefix] [--no-websocket] [--public] [--forward-authorization]
                   [--visibility private|authenticated] [--health-path /healthz]
meshgate deploy list [--kind model|app|tool] [--json]
meshgate deploy get <id>
meshgate deploy visibility <id> private|authenticated
meshgate deploy remove <id>`;

/** The operator at the console: a native administrator by virtue of holding the data dir. */
const OPERATOR: Principal = {
  userId: 'operator',
  username: 'operator (cli)',
  email: null,
  roles: ['admin'],
  attributes: {},
  tenantId: DEFAULT_TENANT,
  source: 'local',
  authMethod: 'pat',
};

const options = {
  kind: { type: 'string' },
  name: { type: 'string' },
  upstream: { type: 'string', multiple: true },
  affinity: { type: 'string' },
  retries: { type: 'string' },
  'max-concurrent': { type: 'string' },
  'queue-timeout-ms': { type: 'string' },
  'rate-limit': { type: 'string' },
  timeout: { type: 'string' },
  'no-strip-prefix': { type: 'boolean', default: false },
  'no-websocket': { type: 'boolean', default: false },
  public: { type: 'boolean', default: false },
  'forward-authorization': { type: 'boolean', default: false },
  visibility: { type: 'string' },
  'health-path': { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

const ACTIONS: Record<string, { takesId: boolean; value?: string; required?: readonly string[] }> = {
  add: { takesId: false, required: ['kind', 'name', 'upstream'] },
  list: { takesId: false },
  get: { takesId: true },
  visibility: { takesId: true, value: 'private|authenticated' },
  remove: { takesId: true },
};

/** Names what is missing or extra before the database is opened. */
function checkUsage(positionals: string[], values: Record<string, unknown>): void {
  const [action, id, ...extra] = positionals;
  const spec = action === undefined ? undefined : ACTIONS[action];
  if (action === undefined) throw new UsageError('missing the action (add, list, get, visibility or remove)');
  if (!spec) throw new UsageError(`unknown action '${action}'`);
  if (spec.takesId && id === undefined) throw new UsageError(`deploy ${action}: missing <id>`);
  if (spec.value && extra[0] === undefined) throw new UsageError(`deploy ${action}: missing ${spec.value}`);
  const rest = spec.value ? extra.slice(1) : extra;
  const unexpected = spec.takesId ? rest : [id, ...rest].filter((arg) => arg !== undefined);
  if (unexpected.length > 0) throw new UsageError(`deploy ${action}: unexpected argument '${unexpected[0]}'`);
  requireFlags(values, spec.required ?? []);
}

const parseDeployArgs = (args: string[]) => parseArgs({ args, allowPositionals: true, options });
type DeployFlags = ReturnType<typeof parseDeployArgs>['values'];

const number = (flag: string | undefined) => (flag === undefined ? undefined : Number(flag));

/** `--upstream URL[=weight]`, once per replica: one is the one-replica form, several the `upstreams` list. */
function replicaFlags(flags: string[] | undefined) {
  const replicas = (flags ?? []).map((flag) => {
    const at = flag.lastIndexOf('=');
    return at > flag.indexOf('://') && /^\d+$/.test(flag.slice(at + 1))
      ? { url: flag.slice(0, at), weight: Number(flag.slice(at + 1)) }
      : { url: flag };
  });
  return replicas.length === 1 && (replicas[0] as { weight?: number }).weight === undefined
    ? { upstream: (replicas[0] as { url: string }).url }
    : { upstreams: replicas };
}

/** `--rate-limit 10[:20]`: requests per second, and the burst (the rate, rounded up, when not given). */
function rateLimitFlag(flag: string | undefined) {
  if (flag === undefined) return undefined;
  const [rate, burst] = flag.split(':');
  return { requests_per_second: Number(rate), burst: burst === undefined ? Math.ceil(Number(rate)) : Number(burst) };
}

/** `deploy add`: the flags as the API's body, checked by the same schema. */
function addInput(values: DeployFlags) {
  const body = {
    kind: values.kind,
    name: values.name,
    ...replicaFlags(values.upstream),
    affinity: values.affinity,
    retries: number(values.retries),
    max_concurrent: number(values['max-concurrent']),
    queue_timeout_ms: number(values['queue-timeout-ms']),
    rate_limit: rateLimitFlag(values['rate-limit']),
    strip_prefix: !values['no-strip-prefix'],
    websocket: !values['no-websocket'],
    timeout_seconds: number(values.timeout),
    requires_auth: !values.public,
    forward_authorization: values['forward-authorization'],
    visibility: values.visibility,
    health_path: values['health-path'],
  };
  return validate(deploymentInput, body, 'body');
}

function listDeployments(service: DeploymentService, values: DeployFlags, env: CliEnv): void {
  const rows = service.list(OPERATOR, values.kind as DeploymentKind | undefined);
  if (values.json) env.out(JSON.stringify(rows, null, 2));
  else
    for (const d of rows) {
      const replicas = (d.upstreams ?? []).map((r) => r.url).join(' ');
      env.out(`${d.id}  ${d.kind.padEnd(5)}  ${d.name}  ${d.runtime_path}  -> ${replicas}`);
    }
}

/** One action, already checked by checkUsage (which admits only the five). */
async function runDeployAction(
  positionals: string[],
  values: DeployFlags,
  service: DeploymentService,
  env: CliEnv,
): Promise<void> {
  const [action, id, value] = positionals as [string, string, string | undefined];
  const show = (result: unknown) => env.out(JSON.stringify(result, null, 2));
  switch (action) {
    case 'add':
      return show(await service.create(OPERATOR, addInput(values), false));
    case 'list':
      return listDeployments(service, values, env);
    case 'get':
      return show(service.get(OPERATOR, id));
    case 'visibility': {
      return show(service.update(OPERATOR, id, validate(deploymentPatch, { visibility: value as string }, 'body')));
    }
    default:
      await service.remove(OPERATOR, id);
      env.out(`removed deployment ${id}`);
  }
}

/** A refusal as one line: the reason, then the field problems or the error's details. */
function refusalLine(error: ApiError): string {
  const detail = error.problems
    ? error.problems.map((p) => `${p.loc.slice(1).join('.')}: ${p.msg}`).join('; ')
    : JSON.stringify(error.extra);
  return `meshgate: ${error.reason} ${detail}`;
}

export const deployCommand: CliCommand = {
  name: 'deploy',
  summary: 'add, list, show and remove model/app/tool deployments',
  usage: USAGE,
  async run(args, env) {
    const { positionals, values } = parseDeployArgs(args);
    checkUsage(positionals, values);
    const domains = await env.boot(['auth', 'authz', 'routing', 'serving']);
    try {
      await runDeployAction(positionals, values, domains.services.get(DEPLOYMENTS), env);
      return 0;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      env.err(refusalLine(error));
      return 1;
    } finally {
      await domains.close();
    }
  },
};
