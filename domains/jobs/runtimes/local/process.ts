/**
 * One local job process: its own directory and process
 * group, output captured straight to a file (so the job outlives a gateway
 * restart and its logs survive it), approved packages installed into a
 * per-job virtualenv before the entrypoint, and the exit status written to a
 * file the gateway reads back after a restart.
 */
import { spawn } from 'node:child_process';
import {
  chownSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { ENV_NAME } from '../../env.ts';
import type { ApprovedPackage } from '../../schema.ts';
import type { JobCgroup } from './cgroups.ts';
import { FILTER_FD, type JobSandbox, shellQuote } from './sandbox.ts';

/**
 * Waits for the background child in `$child`, also through signals that interrupt `wait` (the SIGTERM
 * handler), so the status kept is the child's own; leaves it in `$code`.
 */
const WAIT_CHILD = `child=$!
wait "$child"; code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done`;

/**
 * Loads the job's environment in the process that runs the entrypoint, and only there: the variables come
 * on fd 4 from a 0600 file in the gateway's job dir (never a command line, which /proc shows to every
 * user), as `export NAME='value'` lines the gateway wrote. Nothing outside the sandbox ever runs with them.
 */
const LOAD_ENV_AND_RUN = `eval "$(/usr/bin/cat <&4)"; exec 4<&-; exec /bin/sh -c "$1"`;

/**
 * The entrypoint's parent inside the sandbox. A cancel's SIGTERM cannot reach the sandbox's processes
 * from outside (they left the group with --new-session), so the supervisor writes a line into the stop
 * FIFO and the watcher turns it into kill -1, which in the sandbox's own pid namespace, as the job uid,
 * reaches exactly the job's processes (never pid 1, bwrap's init). The sandbox holds only the read end
 * (fd 3): when the supervisor dies its write end closes, the watcher reads EOF and kills everything at
 * once, so no sandbox outlives its supervisor. The entrypoint gets neither fd 3 nor fd 4.
 */
const RELAYED_ENTRYPOINT = `(exec 4<&-; if read -r _ <&3; then kill -TERM -1; else kill -KILL -1; fi) 2>/dev/null &
exec 3<&-
trap : TERM
(${LOAD_ENV_AND_RUN}) &
exec 4<&-
${WAIT_CHILD}
exit "$code"`;

/**
 * `--no-deps`: every package, dependencies included, must be an approved, hash-pinned catalog entry.
 * The venv is made without its own pip (seconds faster); the interpreter's pip installs
 * into it. Positional: $1 python, $2 venv, $3 wheel dir, $4 requirements.
 */
const INSTALL =
  `"$1" -m venv --without-pip "$2" && "$1" -m pip --python ` +
  `"$2/bin/python" install --quiet --no-cache-dir \\
  --disable-pip-version-check --no-input --require-hashes --no-deps --no-index --find-links "$3" -r "$4"`;

export interface JobPaths {
  dir: string;
  /** The job's environment, 0600, gateway-owned; unlinked as soon as the supervisor holds it open. */
  env: string;
  work: string;
  log: string;
  exit: string;
  pid: string;
  requirements: string;
  venv: string;
  /** The sandbox's user-namespace filter, read by bwrap on FILTER_FD at every step. */
  filter: string;
}

export function jobPaths(jobsDir: string, jobId: string): JobPaths {
  const dir = join(jobsDir, jobId);
  return {
    dir,
    env: join(dir, 'env'),
    work: join(dir, 'work'),
    log: join(dir, 'output.log'),
    exit: join(dir, 'exit'),
    pid: join(dir, 'pid'),
    requirements: join(dir, 'requirements.txt'),
    venv: join(dir, 'venv'),
    filter: join(dir, 'userns-filter.bpf'),
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
    return readNoFollow(paths.exit, (text, fd) => {
      const [step, code] = text.trim().split(' ');
      return { step: step === 'install' ? 'install' : 'entrypoint', code: Number(code), at: fstatSync(fd).mtime };
    });
  } catch {
    return null;
  }
}

/**
 * Reads a job file the gateway itself wrote, refusing a symlink in its place (O_NOFOLLOW): whatever a job
 * may plant, the gateway never reads another file through it.
 */
function readNoFollow<T>(path: string, use: (text: string, fd: number) => T): T {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return use(readFileSync(fd, 'utf8'), fd);
  } finally {
    closeSync(fd);
  }
}

export interface SpawnOptions {
  paths: JobPaths;
  entrypoint: string;
  /** What the entrypoint sees, inside the sandbox; never the supervisor, bwrap or anything outside it. */
  jobEnv: Record<string, string>;
  /** The supervisor's own fixed environment (set by the gateway, nothing of the caller's). */
  supervisorEnv: Record<string, string>;
  packages: readonly ApprovedPackage[];
  python: string;
  wheelDir: string;
  sandbox: JobSandbox;
  /** The job's own cgroup, which the supervisor joins before it starts anything; null to run without. */
  cgroup: JobCgroup | null;
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
}

/** Synchronous (two small writes) so that jobs start in the order the queue releases them. */
export function prepareJobDir(paths: JobPaths, packages: readonly ApprovedPackage[], sandbox: JobSandbox): void {
  const owner = sandbox.jobUid;
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  if (sandbox.filter) writeFileSync(paths.filter, sandbox.filter, { mode: 0o600 });
  const writable = packages.length > 0 ? [paths.work, paths.venv] : [paths.work];
  for (const dir of writable) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // The job uid owns only the dirs it writes; the job dir itself (log, exit, pid) stays the gateway's.
    if (owner !== null) chownSync(dir, owner, owner);
  }
  const lines = packages.map((p) => `${p.name}==${p.version} ${p.sha256.map((h) => `--hash=sha256:${h}`).join(' ')}`);
  writeFileSync(paths.requirements, lines.length > 0 ? `${lines.join('\n')}\n` : '', { mode: 0o644 });
}

/**
 * The supervisor: the process-group leader, outside the sandbox, as the gateway's user. It runs the
 * install step and then the entrypoint, each in its own sandbox (the venv is writable only while the
 * install runs), and writes the exit status where only the gateway can (the job never sees the job dir).
 * `$1` is the entrypoint; everything else in the script is the gateway's own paths and options, quoted.
 * It runs in the job dir with a fixed environment and calls every tool by its absolute path: a job
 * controls its work dir and its own variables, and neither may choose what runs out here.
 * The supervisor outlives SIGTERM (a handler, not an ignore, which the entrypoint would inherit) so the
 * entrypoint gets the whole grace before SIGKILL, and its status is kept.
 */
function supervisorScript(options: SpawnOptions): string {
  const inCgroup = options.cgroup != null;
  const { paths, sandbox, packages } = options;
  const filter = sandbox.isolated ? ` ${FILTER_FD}<${shellQuote(paths.filter)}` : '';
  const command = (argv: readonly string[]) => `${argv.map(shellQuote).join(' ')}${filter}`;
  const lines = [
    `dir=${shellQuote(paths.dir)}`,
    `finish() { printf '%s %s\\n' "$1" "$2" > "$dir/exit.tmp" && ` +
      `/usr/bin/mv -f "$dir/exit.tmp" "$dir/exit"; exit "$2"; }`,
    // First of all, so that every process of the job (bwrap, the install, the entrypoint) starts inside the cgroup.
    ...(options.cgroup?.procs ?? []).map(
      (procs) =>
        `echo "$$" > ${shellQuote(procs)} || { echo "[meshgate] the job's cgroup refused it"; finish entrypoint 125; }`,
    ),
  ];
  if (packages.length > 0) {
    const launch = sandbox.launcher(
      {
        writable: [paths.work, paths.venv],
        readOnly: [paths.requirements, options.wheelDir],
        chdir: paths.work,
      },
      inCgroup,
    );
    const args = [options.python, paths.venv, options.wheelDir, paths.requirements];
    lines.push(
      'echo "[meshgate] installing approved python packages"',
      `${command([...launch, '/bin/sh', '-c', INSTALL, 'meshgate-install', ...args])} 4<&- || finish install 1`,
    );
  }
  if (sandbox.isolated) {
    const launch = sandbox.launcher(
      {
        writable: [paths.work],
        readOnly: packages.length > 0 ? [paths.venv] : [],
        chdir: paths.work,
      },
      inCgroup,
    );
    // fd 3: the supervisor's own read-write end (a reader always exists, so a late stop never SIGPIPEs it);
    // fd 5: the read-only end, which becomes the sandbox's fd 3.
    lines.push(
      '/usr/bin/mkfifo -m 600 "$dir/stop" && exec 3<>"$dir/stop" ' +
        '5<"$dir/stop" && /usr/bin/rm -f "$dir/stop" || finish entrypoint 125',
      `trap 'echo stop >&3' TERM`,
      `${command([...launch, '/bin/sh', '-c', RELAYED_ENTRYPOINT, 'meshgate-job'])} "$1" 3<&5 5<&- &`,
      'exec 5<&- 4<&-',
    );
  } else {
    const launch = sandbox.launcher({ writable: [], readOnly: [], chdir: null }, inCgroup);
    lines.push(
      'trap : TERM',
      `(cd ${shellQuote(paths.work)} && ` +
        `exec ${command([...launch, '/bin/sh', '-c', LOAD_ENV_AND_RUN, 'meshgate-job'])} "$1") ` +
        `&`,
      'exec 4<&-',
    );
  }
  lines.push(WAIT_CHILD, 'finish entrypoint "$code"');
  return lines.join('\n');
}

/** `export NAME='value'` lines; the names were checked at submit, and are checked again before any shell reads them. */
function environmentScript(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([name, value]) => {
      if (!ENV_NAME.test(name) || value.includes('\0'))
        throw new Error(`the job environment variable ${JSON.stringify(name)} is not usable`);
      return `export ${name}=${shellQuote(value)}\n`;
    })
    .join('');
}

/**
 * Writes the job's environment to its 0600 file and opens it for the supervisor; the file is unlinked at
 * once, so the values live only in the open descriptor (and the job's own processes).
 */
function openEnvironment(paths: JobPaths, env: Record<string, string>): number {
  rmSync(paths.env, { force: true });
  const fd = openSync(
    paths.env,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    writeFileSync(fd, environmentScript(env));
  } finally {
    closeSync(fd);
  }
  try {
    return openSync(paths.env, constants.O_RDONLY | constants.O_NOFOLLOW);
  } finally {
    rmSync(paths.env, { force: true });
  }
}

/** Spawns the wrapper as a new process group; returns its pid (= the group id). */
export function spawnJob(options: SpawnOptions): number {
  const { paths } = options;
  const out = openSync(
    paths.log,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
    0o600,
  );
  let env: number | null = null;
  try {
    env = openEnvironment(paths, options.jobEnv);
    const child = spawn('/bin/sh', ['-c', supervisorScript(options), 'meshgate-supervisor', options.entrypoint], {
      cwd: paths.dir,
      env: options.supervisorEnv,
      detached: true,
      // fd 3 stays free for the stop FIFO; fd 4 carries the job's environment.
      stdio: ['ignore', out, out, 'ignore', env],
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
    if (env !== null) closeSync(env);
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
    const [pid, start] = readNoFollow(paths.pid, (text) => text.trim().split(' '));
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
    return lstatSync(paths.log).size;
  } catch {
    return 0;
  }
}
