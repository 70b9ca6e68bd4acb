/**
 * What the process-level tests start as `meshgate`, chosen by MESHGATE_TEST_TARGET:
 *
 *   executable (default)  dist/meshgate, the single executable operators install (built by scripts/build.sh when
 *                         older than the sources), placed in an install root outside the checkout and started as
 *                         packaging/meshgate.service starts it: its ExecStart= words, its Environment=, the
 *                         directories systemd makes for it, the service user's home, systemd's PATH, and nothing
 *                         else of the test's environment but TMPDIR. What a test adds (settings, a database URL)
 *                         stands for the operator's EnvironmentFile= and flags, and wins.
 *   bundle                bin/meshgate, the esbuild bundle a checkout runs, with the test's environment.
 *   sources               app/cli/main.ts under tsx, with the test's environment (development: nothing to build).
 *
 * Every process-level test starts meshgate through meshgateLaunch(), so the switch reaches all of them.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, linkSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readServiceUnit } from './unit-file.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TARGETS = ['executable', 'bundle', 'sources'] as const;
export type TestTarget = (typeof TARGETS)[number];

function chosenTarget(): TestTarget {
  const given = process.env.MESHGATE_TEST_TARGET ?? 'executable';
  if (!(TARGETS as readonly string[]).includes(given)) {
    throw new Error(`MESHGATE_TEST_TARGET=${given}: expected one of ${TARGETS.join(', ')}`);
  }
  return given as TestTarget;
}

export const TEST_TARGET: TestTarget = chosenTarget();

/** systemd's PATH for services (systemd.exec(5), "Environment variables in spawned processes"). */
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface Launch {
  readonly file: string;
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
}

interface Installed {
  /** The scratch root standing for `/`: the unit's absolute paths are taken inside it. */
  readonly root: string;
  readonly unit: ReturnType<typeof readServiceUnit>;
  /** The unit's environment with its paths rooted, and the directories systemd would have made. */
  readonly env: Readonly<Record<string, string>>;
}

let installed: Installed | null = null;

/** A path of the unit (the executable, the data dir, the cache) inside the scratch root. */
function rooted(root: string, value: string): string {
  return /^\/(var|etc|usr)\//.test(value) ? join(root, value) : value;
}

/**
 * The executable, built when stale, hard-linked (else copied) into a fresh root, once per test process; the root is
 * removed when the process exits. A link shares no state with the checkout: a rebuild renames a new file into
 * dist/, and the link keeps the one installed.
 */
function install(): Installed {
  if (installed) return installed;
  execFileSync('bash', [join(ROOT, 'scripts', 'build.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const unit = readServiceUnit();
  const root = mkdtempSync(join(tmpdir(), 'meshgate-installed-'));
  process.on('exit', () => rmSync(root, { recursive: true, force: true }));
  const exe = join(root, unit.execStart[0] as string);
  mkdirSync(dirname(exe), { recursive: true });
  try {
    linkSync(join(ROOT, 'dist', 'meshgate'), exe);
  } catch {
    copyFileSync(join(ROOT, 'dist', 'meshgate'), exe);
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(unit.environment)) env[name] = rooted(root, value);
  for (const [name, paths] of Object.entries({ ...unit.directories, HOME: unit.home })) {
    // Every one inside the root, whatever its path: these are made and chmod-ed, which must never reach the host.
    const made = paths.split(':').map((path) => join(root, path));
    for (const path of made) {
      mkdirSync(path, { recursive: true });
      chmodSync(path, 0o700);
    }
    env[name] = made.join(':');
  }
  installed = { root, unit, env };
  return installed;
}

/**
 * How to run `meshgate <args>` on the chosen target, with `extraEnv` added. A `serve` on the executable runs the
 * unit's ExecStart= words with the test's arguments after them (a later flag wins, as `--workers 1` after the
 * unit's `--workers auto`).
 */
export function meshgateLaunch(args: readonly string[], extraEnv: Record<string, string> = {}): Launch {
  if (TEST_TARGET === 'sources') {
    const tsx = import.meta.resolve('tsx');
    const main = join(ROOT, 'app', 'cli', 'main.ts');
    return { file: process.execPath, args: ['--import', tsx, main, ...args], env: { ...process.env, ...extraEnv } };
  }
  if (TEST_TARGET === 'bundle') {
    return { file: join(ROOT, 'bin', 'meshgate'), args: [...args], env: { ...process.env, ...extraEnv } };
  }
  return unitLaunch(args, extraEnv);
}

/** `meshgate <args>` on the executable as the unit starts it, whatever the target (tests of the install itself). */
export function unitLaunch(args: readonly string[], extraEnv: Record<string, string> = {}): Launch {
  const { root, unit, env } = install();
  const [exe, ...execArgs] = unit.execStart.map((word, i) => (i === 0 ? join(root, word) : word));
  const words = args[0] === execArgs[0] ? [...execArgs, ...args.slice(1)] : [...args];
  const base = { PATH: SYSTEMD_PATH, ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}) };
  return { file: exe as string, args: words, env: { ...base, ...env, ...extraEnv } };
}

/** The unit's environment as the executable gets it: its Environment=, directories and home, inside the root. */
export function unitEnvironment(): Readonly<Record<string, string>> {
  return install().env;
}

export interface Ran {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * `meshgate <args>` on the chosen target to its end, as promisified execFile answers: its output, or a rejection
 * carrying `code`, `stdout` and `stderr` when it exits non-zero.
 */
export function execMeshgate(
  args: readonly string[],
  extraEnv: Record<string, string> = {},
  options: { timeout?: number; input?: string } = {},
): Promise<Ran> {
  const launch = meshgateLaunch(args, extraEnv);
  return new Promise((resolve, reject) => {
    const child = execFile(
      launch.file,
      launch.args,
      { env: launch.env, timeout: options.timeout ?? 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(Object.assign(error, { stdout, stderr }));
        else resolve({ stdout, stderr });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}
