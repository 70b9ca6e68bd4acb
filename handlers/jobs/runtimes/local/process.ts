/**
 * One local job process (issue 7 item 3): its own directory and process
 * group, output captured straight to a file (so the job outlives a gateway
 * restart and its logs survive it), approved packages installed into a
 * per-job virtualenv before the entrypoint, and the exit status written to a
 * file the gateway reads back after a restart.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApprovedPackage } from '../../schema.ts';

/**
 * The process-group leader. Positional: $1 entrypoint, $2 job dir, $3 python,
 * $4 wheel dir. `--no-deps`: every package, dependencies included, must be
 * an approved, hash-pinned catalog entry (contract §5.8). The venv is made
 * without its own pip (seconds faster); the interpreter's pip installs into it.
 */
const WRAPPER = `
dir=$2
if [ -s "$dir/requirements.txt" ]; then
  echo "[meshgate] installing approved python packages"
  if ! "$3" -m venv --without-pip "$dir/venv" || ! "$3" -m pip --python "$dir/venv/bin/python" install --quiet \\
      --disable-pip-version-check --no-input --require-hashes --no-deps --no-index --find-links "$4" -r "$dir/requirements.txt"; then
    printf 'install 1\\n' > "$dir/exit.tmp" && mv "$dir/exit.tmp" "$dir/exit"
    exit 1
  fi
  PATH="$dir/venv/bin:$PATH"; VIRTUAL_ENV="$dir/venv"; export PATH VIRTUAL_ENV
fi
# The leader outlives SIGTERM (a handler, not an ignore, which the entrypoint would
# inherit) so the entrypoint gets the whole grace before SIGKILL, and its status is kept.
trap : TERM
/bin/sh -c "$1" &
child=$!
wait "$child"; code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
printf 'entrypoint %s\\n' "$code" > "$dir/exit.tmp" && mv "$dir/exit.tmp" "$dir/exit"
exit $code
`;

export interface JobPaths {
  dir: string;
  work: string;
  log: string;
  exit: string;
  pid: string;
  requirements: string;
}

export function jobPaths(jobsDir: string, jobId: string): JobPaths {
  const dir = join(jobsDir, jobId);
  return {
    dir,
    work: join(dir, 'work'),
    log: join(dir, 'output.log'),
    exit: join(dir, 'exit'),
    pid: join(dir, 'pid'),
    requirements: join(dir, 'requirements.txt'),
  };
}

export interface ExitRecord {
  step: 'entrypoint' | 'install';
  code: number;
  at: Date;
}

/** The wrapper's exit-status file, or null when the job has not finished (or was killed before writing it). */
export function readExit(paths: JobPaths): ExitRecord | null {
  try {
    const [step, code] = readFileSync(paths.exit, 'utf8').trim().split(' ');
    return { step: step === 'install' ? 'install' : 'entrypoint', code: Number(code), at: statSync(paths.exit).mtime };
  } catch {
    return null;
  }
}

export interface SpawnOptions {
  paths: JobPaths;
  entrypoint: string;
  env: Record<string, string>;
  packages: readonly ApprovedPackage[];
  python: string;
  wheelDir: string;
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
}

/** Synchronous (two small writes) so that jobs start in the order the queue releases them. */
export function prepareJobDir(paths: JobPaths, packages: readonly ApprovedPackage[]): void {
  mkdirSync(paths.work, { recursive: true, mode: 0o700 });
  const lines = packages.map((p) => `${p.name}==${p.version} ${p.sha256.map((h) => `--hash=sha256:${h}`).join(' ')}`);
  writeFileSync(paths.requirements, lines.length > 0 ? `${lines.join('\n')}\n` : '');
}

/** Spawns the wrapper as a new process group; returns its pid (= the group id). */
export function spawnJob(options: SpawnOptions): number {
  const { paths } = options;
  const out = openSync(paths.log, 'a', 0o600);
  try {
    const child = spawn('/bin/sh', ['-c', WRAPPER, 'meshgate-job', options.entrypoint, paths.dir, options.python, options.wheelDir], {
      cwd: paths.work,
      env: options.env,
      detached: true,
      stdio: ['ignore', out, out],
    });
    let reported = false;
    const report = (code: number | null, signal: NodeJS.Signals | null) => {
      if (!reported) options.onExit(code, signal);
      reported = true;
    };
    child.once('error', () => report(null, null));
    child.once('exit', report);
    child.unref();
    if (child.pid === undefined) return -1;
    writeFileSync(paths.pid, `${child.pid} ${processStartTime(child.pid) ?? ''}\n`);
    return child.pid;
  } finally {
    closeSync(out);
  }
}

/**
 * Field 22 of /proc/<pid>/stat: tells a live job apart from a later process
 * that reused its pid. null when gone or a zombie (dead, not yet reaped).
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || fields[0] === 'X' ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

/** The recorded pid when that very process is still alive, else null. */
export function livePid(paths: JobPaths): number | null {
  try {
    const [pid, start] = readFileSync(paths.pid, 'utf8').trim().split(' ');
    const n = Number(pid);
    return Number.isInteger(n) && n > 0 && start && processStartTime(n) === start ? n : null;
  } catch {
    return null;
  }
}

export function wasStarted(paths: JobPaths): boolean {
  try {
    statSync(paths.pid);
    return true;
  } catch {
    return false;
  }
}

/** Signals the whole group; a group already gone is not an error. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

export function logSize(paths: JobPaths): number {
  try {
    return statSync(paths.log).size;
  } catch {
    return 0;
  }
}
