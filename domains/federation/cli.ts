/**
 * `meshgate federation pair`: the whole pairing procedure of the spec
 * ("Federation management", pairing procedure 1–4, then a ping) against two
 * running gateways over HTTPS. The PSK and the admin tokens are read from
 * files or stdin, never from argv, where `ps` would show them, and are sent
 * only over https, or plain http to a loopback host (urlRefusal).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { CliCommand, CliEnv } from '../../gateway/module.ts';
import { APPLY_USAGE, runApply } from './cli-apply.ts';
import { Gateway, StepFailed, urlRefusal } from './cli-gateway.ts';

const USAGE = `meshgate federation pair
    --initiator-url <https://host:port> --initiator-token-file <file> [--initiator-ca <pem file>]
    --receiver-url <https://host:port>  --receiver-token-file <file>  [--receiver-ca <pem file>]
    --receiver-ip <ip[:port]> [--receiver-hostname <name>]     the route the initiator dials
    [--initiator-ip <ip[:port]> --initiator-hostname <name>]   the route the receiver's preflight probes
    [--initiator-name <label>] [--receiver-name <label>] [--shared-issuer-url <url>]
    (--psk-file <file> | --psk-stdin)`;

const OPTIONS = {
  'initiator-url': { type: 'string' },
  'initiator-token-file': { type: 'string' },
  'initiator-ca': { type: 'string' },
  'receiver-url': { type: 'string' },
  'receiver-token-file': { type: 'string' },
  'receiver-ca': { type: 'string' },
  'receiver-ip': { type: 'string' },
  'receiver-hostname': { type: 'string' },
  'initiator-ip': { type: 'string' },
  'initiator-hostname': { type: 'string' },
  'initiator-name': { type: 'string' },
  'receiver-name': { type: 'string' },
  'shared-issuer-url': { type: 'string' },
  'psk-file': { type: 'string' },
  'psk-stdin': { type: 'boolean', default: false },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

async function readSecrets(
  values: Values,
  env: CliEnv,
): Promise<{ psk: string; initiatorToken: string; receiverToken: string }> {
  const file = (name: 'initiator-token-file' | 'receiver-token-file' | 'psk-file') =>
    readFileSync(values[name] as string, 'utf8').trim();
  const psk = values['psk-stdin'] ? (await env.readStdin()).trim() : file('psk-file');
  return { psk, initiatorToken: file('initiator-token-file'), receiverToken: file('receiver-token-file') };
}

function missing(values: Values): string[] {
  const required = [
    'initiator-url',
    'initiator-token-file',
    'receiver-url',
    'receiver-token-file',
    'receiver-ip',
  ] as const;
  const out: string[] = required.filter((k) => !values[k]).map((k) => `--${k}`);
  if (!values['psk-file'] === !values['psk-stdin']) out.push('exactly one of --psk-file, --psk-stdin');
  return out;
}

async function preflightStep(env: CliEnv, gw: Gateway, route: { ip: string; hostname: string | null }) {
  const report = await gw.call('POST', '/preflight', { remote_ips: [{ ...route, primary: true }] });
  if (!report.ok)
    throw new StepFailed(`${gw.label}: preflight of ${route.ip}: ${report.reason} — ${report.remedy ?? ''}`);
  env.out(`preflight ${gw.label} → ${route.ip}: ok`);
}

async function runPair(values: Values, env: CliEnv): Promise<void> {
  const secrets = await readSecrets(values, env);
  const ca = (name: 'initiator-ca' | 'receiver-ca') => (values[name] ? readFileSync(values[name], 'utf8') : undefined);
  const initiator = new Gateway(
    'initiator',
    values['initiator-url'] as string,
    secrets.initiatorToken,
    ca('initiator-ca'),
  );
  const receiver = new Gateway('receiver', values['receiver-url'] as string, secrets.receiverToken, ca('receiver-ca'));
  try {
    const receiverRoute = { ip: values['receiver-ip'] as string, hostname: values['receiver-hostname'] ?? null };
    await preflightStep(env, initiator, receiverRoute);
    if (values['initiator-ip'])
      await preflightStep(env, receiver, {
        ip: values['initiator-ip'],
        hostname: values['initiator-hostname'] ?? null,
      });
    const shared = values['shared-issuer-url'] ? { shared_issuer_url: values['shared-issuer-url'] } : {};
    const r = await receiver.call('POST', '', {
      remote_cluster_name: values['initiator-name'] ?? 'initiator',
      role: 'receiver',
      preshared_key: secrets.psk,
      ...shared,
    });
    env.out(`receiver record ${r.id}: ${r.status}`);
    const i = await initiator.call('POST', '', {
      remote_cluster_name: values['receiver-name'] ?? 'receiver',
      role: 'initiator',
      remote_ips: [{ ...receiverRoute, primary: true }],
      preshared_key: secrets.psk,
      ...shared,
    });
    env.out(`initiator record ${i.id}: ${i.status}`);
    const paired = await initiator.call('POST', `/${i.id}/pair`);
    env.out(`paired: initiator ${paired.status}, remote_cluster_id ${paired.remote_cluster_id}`);
    const ping = await initiator.call('POST', `/${i.id}/ping`);
    if (ping.reachable !== true) throw new StepFailed('initiator: ping did not report reachable');
    env.out(
      JSON.stringify({
        initiator_federation_id: i.id,
        receiver_federation_id: r.id,
        remote_cluster_id: paired.remote_cluster_id,
        reachable: true,
      }),
    );
  } finally {
    await Promise.all([initiator.close(), receiver.close()]);
  }
}

export const federationCommand: CliCommand = {
  name: 'federation',
  summary: 'pair two gateways, or apply a declared set of peers to one',
  usage: `${USAGE}\n${APPLY_USAGE}`,
  async run(args, env) {
    if (args[0] === 'apply') return runApply(args.slice(1), env);
    let parsed: { values: Values; positionals: string[] };
    try {
      parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true });
    } catch (error) {
      env.err(`meshgate: ${(error as Error).message}\nusage:\n${USAGE}`);
      return 2;
    }
    const problems = missing(parsed.values);
    if (parsed.positionals[0] !== 'pair' || parsed.positionals.length !== 1 || problems.length > 0) {
      env.err(`${problems.length ? `meshgate: missing ${problems.join(', ')}\n` : ''}usage:\n${USAGE}`);
      return 2;
    }
    const refusals = (['initiator-url', 'receiver-url'] as const)
      .map((flag) => urlRefusal(parsed.values[flag] as string, `--${flag}`, 'the PSK and an admin token'))
      .filter((refusal) => refusal !== null);
    if (refusals.length > 0) {
      env.err(refusals.map((refusal) => `meshgate: ${refusal}`).join('\n'));
      return 2;
    }
    try {
      await runPair(parsed.values, env);
      return 0;
    } catch (error) {
      if (!(error instanceof StepFailed) && (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      env.err(`meshgate: ${(error as Error).message}`);
      return 1;
    }
  },
};
