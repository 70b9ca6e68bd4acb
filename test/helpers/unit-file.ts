/**
 * The shipped systemd unit (packaging/meshgate.service) read as systemd reads the parts a test needs to start the
 * gateway the way the unit does: ExecStart=, Environment= and the directories systemd makes for the service
 * (StateDirectory=, CacheDirectory=), with the user's home from packaging/meshgate.sysusers. The test restates
 * none of them, so a change to the unit is a change to what the tests start.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGING = fileURLToPath(new URL('../../packaging/', import.meta.url));

export interface ServiceUnit {
  /** ExecStart= split into words: the executable's path first. */
  readonly execStart: readonly string[];
  /** Every Environment= assignment, later ones winning (systemd.exec(5), "Environment="). */
  readonly environment: Readonly<Record<string, string>>;
  /** Environment variables systemd sets for the directories it makes: STATE_DIRECTORY, CACHE_DIRECTORY. */
  readonly directories: Readonly<Record<string, string>>;
  /** The service user's home (sysusers.d(5) `u` line), which systemd gives as $HOME. */
  readonly home: string;
}

/**
 * Words as systemd splits a command line or an Environment= value: on whitespace, with double or single quotes
 * grouping (systemd.service(5), "Command lines"; systemd.syntax(7), "Quoting"). Backslash escapes inside quotes are
 * kept literally: the shipped unit uses none, and a test would notice one it mangled.
 */
export function systemdWords(text: string): string[] {
  const words: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    words.push(match[1] ?? match[2] ?? match[3] ?? '');
  }
  return words;
}

/** `[Service]` settings of a unit file, each key with all its values in order (comments and other sections out). */
export function serviceSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1] as string;
      continue;
    }
    const at = line.indexOf('=');
    if (section !== 'Service' || at < 0) continue;
    const key = line.slice(0, at).trim();
    settings.set(key, [...(settings.get(key) ?? []), line.slice(at + 1).trim()]);
  }
  return settings;
}

export function readServiceUnit(): ServiceUnit {
  const settings = serviceSettings(readFileSync(join(PACKAGING, 'meshgate.service'), 'utf8'));
  const one = (key: string) => {
    const values = settings.get(key) ?? [];
    if (values.length !== 1)
      throw new Error(`packaging/meshgate.service: expected one ${key}=, found ${values.length}`);
    return values[0] as string;
  };
  const environment: Record<string, string> = {};
  for (const value of settings.get('Environment') ?? []) {
    for (const word of systemdWords(value)) {
      const at = word.indexOf('=');
      if (at > 0) environment[word.slice(0, at)] = word.slice(at + 1);
    }
  }
  // systemd.exec(5), "RuntimeDirectory=": each is made under its base and named in the matching variable.
  const directories: Record<string, string> = {};
  for (const [key, base, variable] of [
    ['StateDirectory', '/var/lib', 'STATE_DIRECTORY'],
    ['CacheDirectory', '/var/cache', 'CACHE_DIRECTORY'],
  ] as const) {
    const names = settings.get(key);
    if (names)
      directories[variable] = names
        .flatMap(systemdWords)
        .map((name) => `${base}/${name}`)
        .join(':');
  }
  const sysusers = readFileSync(join(PACKAGING, 'meshgate.sysusers'), 'utf8');
  const user = sysusers.split('\n').find((line) => line.startsWith('u '));
  const home = user ? systemdWords(user)[4] : undefined;
  if (!home) throw new Error('packaging/meshgate.sysusers: no `u` line with a home');
  return { execStart: systemdWords(one('ExecStart')), environment, directories, home };
}
