/** Config flags shared by every subcommand; each also has a PLATFORM_* env var (gateway/config/schema.ts). */
import type { ConfigInput } from '../../gateway/config/schema.ts';

export const configFlagOptions = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  'https-port': { type: 'string' },
  'http-port': { type: 'string' },
  bind: { type: 'string' },
  hostname: { type: 'string', multiple: true },
  'cluster-name': { type: 'string' },
  'log-level': { type: 'string' },
} as const;

type FlagValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

export function configFromFlags(values: FlagValues): ConfigInput {
  const out: Record<string, unknown> = {};
  const str = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  if (str('data-dir')) out.dataDir = str('data-dir');
  if (str('https-port') !== undefined) out.httpsPort = Number(str('https-port'));
  if (str('http-port') !== undefined) out.httpPort = Number(str('http-port'));
  if (str('bind')) out.bind = str('bind');
  if (Array.isArray(values.hostname)) out.hostnames = values.hostname.map(String);
  if (str('cluster-name')) out.clusterName = str('cluster-name');
  if (str('log-level')) out.logLevel = str('log-level');
  return out as ConfigInput;
}
