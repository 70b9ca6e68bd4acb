/**
 * `meshgate federation apply <file>`: the declared set of peers (declared-file.ts) applied to one running gateway
 * through its admin API (`POST /api/cluster/federations/apply`). The plan is printed first; with `--dry-run` nothing
 * else happens, otherwise the set is applied and each peer's outcome printed. Secrets (the admin token, the PSKs or
 * fleet key) are read from files or the environment, never argv, and travel only over https unless the gateway is on
 * this machine (a loopback host). Exit 0 when no peer failed (a peer whose other side has not applied yet is `pending`:
 * apply again), 1 when one did, 2 on a usage error.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { CliEnv } from '../../gateway/module.ts';
import { Gateway, StepFailed, urlRefusal } from './cli-gateway.ts';
import type { PeerOutcome } from './declared.ts';
import { DeclaredFileError, readDeclaredFile } from './declared-file.ts';

export const APPLY_USAGE = `meshgate federation apply <file> --url <https://host:port> --token-file <file>
    [--ca <pem file>] [--cluster <name>] [--dry-run]   <file>: the declared peers (docs/federation.md)`;

const OPTIONS = {
  url: { type: 'string' },
  'token-file': { type: 'string' },
  ca: { type: 'string' },
  cluster: { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
} as const;

function planLine(o: PeerOutcome): string {
  const list = o.allowlist;
  const entries =
    list.added + list.changed + list.revoked > 0 ? ` allowlist +${list.added} ~${list.changed} -${list.revoked}` : '';
  const psk = o.psk === 'will_be_set' ? ' psk will be set' : o.psk === 'set_not_compared' ? ' psk set' : '';
  return `${o.action.padEnd(10)} ${o.name}${o.status ? ` (${o.status})` : ''}${psk}${entries}`;
}

/** Said under a plan that keeps a record: a plan never compares PSKs (declared.ts), applying does. */
const NOT_COMPARED =
  '  (a plan does not compare PSKs with the stored ones: a kept peer whose PSK alone changed is replaced on apply)';

function outcomeLine(o: PeerOutcome): string {
  return `${o.name}: ${o.outcome}${o.reason ? ` (${o.reason})` : ''}${o.federation_id ? ` ${o.federation_id}` : ''}`;
}

async function apply(file: string, values: Record<string, string | boolean | undefined>, env: CliEnv) {
  const ca = values.ca ? readFileSync(values.ca as string, 'utf8') : undefined;
  const token = readFileSync(values['token-file'] as string, 'utf8').trim();
  const gateway = new Gateway('gateway', values.url as string, token, ca);
  try {
    // A fleet file names every member: this gateway is the one its own capabilities name, unless told otherwise.
    const cluster =
      (values.cluster as string | undefined) ??
      ((await gateway.call('GET', '/api/cluster/cluster_capabilities')).cluster_name as string);
    const peers = readDeclaredFile(file, cluster, process.env);
    const plan = await gateway.call('POST', '/apply', { dry_run: true, peers });
    env.out(`plan for ${cluster} (${peers.length} peers):`);
    for (const o of plan.peers as PeerOutcome[]) env.out(`  ${planLine(o)}`);
    if ((plan.peers as PeerOutcome[]).some((o) => o.psk === 'set_not_compared')) env.out(NOT_COMPARED);
    if (values['dry-run']) return 0;
    const done = await gateway.call('POST', '/apply', { dry_run: false, peers });
    const outcomes = done.peers as PeerOutcome[];
    for (const o of outcomes) env.out(outcomeLine(o));
    return outcomes.some((o) => o.outcome === 'failed') ? 1 : 0;
  } finally {
    await gateway.close();
  }
}

export async function runApply(args: string[], env: CliEnv): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true });
  } catch (error) {
    env.err(`meshgate: ${(error as Error).message}\nusage:\n${APPLY_USAGE}`);
    return 2;
  }
  const [file, ...extra] = parsed.positionals;
  if (!file || extra.length > 0 || !parsed.values.url || !parsed.values['token-file']) {
    env.err(`usage:\n${APPLY_USAGE}`);
    return 2;
  }
  try {
    const refusal = urlRefusal(parsed.values.url, '--url', `the admin token and the PSKs of ${file}`);
    if (refusal) {
      env.err(`meshgate: ${refusal}`);
      return 2;
    }
    return await apply(file, parsed.values, env);
  } catch (error) {
    const known =
      error instanceof StepFailed ||
      error instanceof DeclaredFileError ||
      (error as NodeJS.ErrnoException).code === 'ENOENT';
    if (!known) throw error;
    env.err(`meshgate: ${(error as Error).message}`);
    return 1;
  }
}
