/**
 * Config flags shared by every subcommand: the rows of SERVE_SETTINGS that
 * have a flag, each setting the same key as its PLATFORM_* variable.
 */
import type { ParseArgsOptionsConfig } from 'node:util';
import { UsageError } from '../../gateway/cli/usage.ts';
import { setPath } from '../../gateway/config/load.ts';
import { type ConfigInput, ENV_NAMES } from '../../gateway/config/schema.ts';
import { CONFIG_FILE_ENV, SERVE_SETTINGS } from './settings.ts';

const FLAGGED = SERVE_SETTINGS.flatMap((s) => (s.flag ? [{ flag: s.flag, env: s.env[0] as string }] : []));

export const configFlagOptions: ParseArgsOptionsConfig = Object.fromEntries(
  FLAGGED.map(({ flag, env }) => [flag, { type: 'string', multiple: ENV_NAMES[env]?.kind === 'csv' }]),
);

type FlagValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** The config file flag (--config), read by loadConfig() rather than merged as a key. */
export const CONFIG_FILE_FLAG = FLAGGED.find(({ env }) => env === CONFIG_FILE_ENV)?.flag as string;

/** Flag values → config overrides, parsed like their variables; the schema then names a bad value by key. */
export function configFromFlags(values: FlagValues): ConfigInput {
  const out = {};
  for (const { flag, env } of FLAGGED) {
    const raw = values[flag];
    if (raw === undefined) continue;
    const texts = Array.isArray(raw) ? raw : [raw];
    // Parsed leniently (strict: false, so the command gets the other flags), a flag with no value comes as `true`
    // at the end of the line, or takes the next flag as its value (`--https-port --bind x`); neither is meant.
    const valueless = texts.some((text) => typeof text !== 'string' || text.startsWith('--'));
    if (valueless) throw new UsageError(`--${flag} needs a value`);
    const spec = ENV_NAMES[env];
    if (!spec) continue;
    setPath(out, spec.path, flagValue(spec.kind, texts.map(String)));
  }
  return out as ConfigInput;
}

/** A repeatable flag gives a list; the last of repeated single values wins, as with most Unix tools. */
function flagValue(kind: (typeof ENV_NAMES)[string]['kind'], texts: string[]): unknown {
  const text = texts[texts.length - 1] as string;
  if (kind === 'csv') return texts;
  if (kind === 'nullable-number' && text === 'none') return null;
  return kind === 'number' || kind === 'nullable-number' ? Number(text) : text;
}
