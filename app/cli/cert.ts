/**
 * `meshgate cert status`: the public listener's certificate as the data dir holds it, read without a running
 * gateway (the files are the gateway's, the same user's): where it comes from (ACME, the operator's files, the
 * platform CA), its names, issuer, not-after, and for ACME the next renewal and the last error. Nothing secret is
 * printed: no key, no account.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../../gateway/cli/usage.ts';
import type { CliCommand } from '../../gateway/module.ts';
import { shownUrl } from '../../gateway/tls/acme/reach.ts';
import { AcmeStore, certificateNames } from '../../gateway/tls/acme/store.ts';
import { acmeNames } from '../public-certificate.ts';

function describe(certPem: string): string[] {
  const certificate = new X509Certificate(certPem);
  return [
    `names: ${certificateNames(certificate).join(', ') || '(no DNS name)'}`,
    `issuer: ${certificate.issuer.replaceAll('\n', ', ')}`,
    `serial: ${certificate.serialNumber}`,
    `not after: ${certificate.validToDate.toISOString()}`,
  ];
}

type Env = Parameters<CliCommand['run']>[1];

function acmeStatus(env: Env): number {
  const { config } = env;
  const out = (line: string) => env.out(line);
  const store = new AcmeStore(config.dataDir, (error) =>
    out(`status.json unreadable (${error.message}): read as empty`),
  );
  const status = store.status();
  const pair = store.certificate();
  out(`source: ACME (${shownUrl(config.tls.acme.directoryUrl as string)}), ordering ${acmeNames(config).join(', ')}`);
  for (const line of pair ? describe(pair.certPem) : ['no certificate issued yet (the platform CA serves)']) out(line);
  if (pair) {
    const other = pair.directoryUrl === config.tls.acme.directoryUrl ? '' : ' (not the one configured: reordered)';
    out(`issued by directory: ${pair.directoryUrl ? shownUrl(pair.directoryUrl) : 'not recorded'}${other}`);
  }
  out(`next renewal: ${status.nextRenewal ?? 'not scheduled (no gateway has run with ACME)'}`);
  out(`last error: ${status.lastError ? `${status.lastError} (at ${status.lastErrorAt})` : 'none'}`);
  return status.lastError && status.failures > 0 ? 1 : 0;
}

function fileStatus(env: Env): number {
  const { config } = env;
  const out = (line: string) => env.out(line);
  const operator = config.tlsCertFile !== null;
  const file = config.tlsCertFile ?? join(config.dataDir, 'tls', 'server.pem');
  out(`source: ${operator ? `the operator's files (${file})` : `the platform CA (${file})`}`);
  if (!operator && !existsSync(file)) {
    out('no certificate yet: the gateway issues one at its first start');
    return 0;
  }
  for (const line of describe(readFileSync(file, 'utf8'))) out(line);
  out(operator ? 'renewal: by the operator (rewritten files are taken live)' : 'renewal: at each start, 30 days ahead');
  return 0;
}

export const certCommand: CliCommand = {
  name: 'cert',
  summary: "show the public listener's certificate: names, issuer, not-after, next renewal, last error",
  usage: `meshgate cert status [--config FILE] [any flag of meshgate serve]

Reads the data dir of the configuration as 'meshgate serve' would. Exit 0; 1 when ACME's last attempt failed.`,
  async run(args, env) {
    if (args[0] !== 'status' || args.length > 1) {
      throw new UsageError(
        args.length === 0 ? 'a subcommand is needed: status' : `unexpected argument '${args.at(-1)}'`,
      );
    }
    return env.config.tls.acme.directoryUrl !== null ? acmeStatus(env) : fileStatus(env);
  },
};
