/**
 * The local job sandbox: how a job step is launched so that it sees only the
 * read-only system, its own directories and a private /tmp and /proc, with
 * no capabilities and, when the gateway runs as root, as a dedicated
 * unprivileged uid. Built on bubblewrap (the sandbox Flatpak uses); the
 * resource limits are set with util-linux prlimit around the whole step.
 *
 * Layout of one launch, outermost first:
 *   prlimit (limits, inherited by everything below)
 *   setsid bwrap … (its own session: a SIGTERM to the job's process group
 *                   reaches the supervisor, which relays it; --die-with-parent
 *                   ties the sandbox to the supervisor, not to the gateway)
 *   [root only] setpriv --reuid <uid> … (drops to the job uid inside the sandbox)
 *   /bin/sh -c <step>
 * Memory and process caps are per job, in its cgroup (cgroups.ts); the launcher reads the user-namespace filter
 * (userns-filter.ts) on FILTER_FD, which the caller opens.
 */
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { usernsFilter } from './userns-filter.ts';

export interface SandboxLimits {
  addressSpaceBytes: number;
  openFiles: number;
  cpuSeconds: number;
  tmpBytes: number;
  /** The job's process cap: its cgroup's pids.max, or, for a job that runs without a cgroup, RLIMIT_NPROC. */
  processes: number;
}

export interface SandboxOptions {
  mode: 'bwrap' | 'none';
  bwrapPath: string;
  uid: number;
  readOnlyPaths: readonly string[];
  /** `none`: the job gets a network namespace of its own, with nothing but its own loopback. */
  network: 'host' | 'none';
  limits: SandboxLimits;
  /** Largest file a job may write, its output log included (RLIMIT_FSIZE). */
  maxFileBytes: number;
}

/** Where one step runs: its writable dirs and the read-only ones (same paths inside as outside). */
export interface StepMounts {
  writable: readonly string[];
  readOnly: readonly string[];
  chdir: string | null;
}

/**
 * The system the interpreter and the shell need, read-only. /etc is never
 * mounted whole (it may hold credentials, e.g. a netrc or a service's own
 * keys): only name resolution, the dynamic loader, locale/time and the CA
 * bundle (a job calls the gateway's API over TLS).
 */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
const ETC_FILES = [
  '/etc/os-release',
  '/etc/debian_version',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/alternatives',
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/hosts',
  '/etc/resolv.conf',
  '/etc/host.conf',
  '/etc/gai.conf',
  '/etc/localtime',
  '/etc/locale.alias',
  '/etc/mime.types',
  // The trust store only: /etc/ssl and /etc/pki also hold private keys (/etc/ssl/private, /etc/pki/tls/private).
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/pki/tls/certs',
  '/etc/pki/ca-trust',
  '/etc/python3',
];

/** A path the gateway keeps from jobs, named for the start error. */
export interface GuardedPath {
  setting: string;
  path: string;
}

/**
 * Which guarded paths a sandbox would expose: one inside a mounted path, or holding one (a mount of part of
 * the data dir shows that part). Compared after resolving symlinks, as the kernel would mount them. When the
 * gateway is not root, jobs run as its own uid, so a mount is all that stands between a job and these files.
 */
export function exposedPaths(readOnlyPaths: readonly string[], guarded: readonly GuardedPath[]): string[] {
  const mounts = [...SYSTEM_DIRS, ...ETC_FILES, ...readOnlyPaths].map(resolved);
  const within = (path: string, dir: string) => path === dir || path.startsWith(dir === '/' ? '/' : `${dir}/`);
  return guarded.flatMap(({ setting, path }) => {
    const real = resolved(path);
    const mount = mounts.find((m) => within(real, m) || within(m, real));
    return mount ? [`${setting} (${path}) would be visible to jobs through the sandbox mount ${mount}`] : [];
  });
}

function resolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** True when this process can switch uids, so jobs must run as the dedicated uid. */
const runsAsRoot = () => process.geteuid?.() === 0;

/** The descriptor bwrap reads the user-namespace filter from (`--add-seccomp-fd`); free in the supervisor. */
export const FILTER_FD = 9;

export class JobSandbox {
  /** The seccomp program every sandbox loads; null on an architecture it is not written for (no sandbox then). */
  readonly filter = usernsFilter();

  constructor(readonly options: SandboxOptions) {}

  get isolated(): boolean {
    return this.options.mode === 'bwrap';
  }

  /** The uid that must own the job's writable dirs, or null when it is the gateway's own. */
  get jobUid(): number | null {
    return this.isolated && runsAsRoot() ? this.options.uid : null;
  }

  /**
   * argv of one job step up to (excluding) the command it runs. `inCgroup`: the job runs in a cgroup of its own that
   * caps its processes; without one the per-uid RLIMIT_NPROC is the only bound on a fork bomb, shared by the jobs of
   * that uid but better than none.
   */
  launcher(mounts: StepMounts, inCgroup: boolean): string[] {
    const limits = this.#limits(inCgroup);
    if (!this.isolated) return limits;
    const { bwrapPath, uid } = this.options;
    const args = ['/usr/bin/setsid', bwrapPath, ...this.#isolation()];
    // bwrap would give the dirs it creates above a mount the modes of the host's (0700 data dir): the job uid
    // could then not reach its own dirs by their paths. They are made 0755 first; they hold nothing else.
    for (const dir of ancestors([...mounts.readOnly, ...mounts.writable])) args.push('--perms', '0755', '--dir', dir);
    for (const dir of mounts.readOnly) args.push('--ro-bind', dir, dir);
    for (const dir of mounts.writable) args.push('--bind', dir, dir);
    if (mounts.chdir) args.push('--chdir', mounts.chdir);
    if (!runsAsRoot()) return [...limits, ...args, '--'];
    // bwrap runs privileged (no user namespace): it keeps only what setpriv needs to drop to the job uid (and
    // DAC_READ_SEARCH to chdir into the job-owned 0700 work dir), and setpriv then clears every capability,
    // the bounding set included, and sets no_new_privs (no setuid gains).
    args.push(
      '--cap-drop',
      'ALL',
      ...['CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP', 'CAP_DAC_READ_SEARCH'].flatMap((c) => ['--cap-add', c]),
      '--',
    );
    const drop = [
      '/usr/bin/setpriv',
      `--reuid=${uid}`,
      `--regid=${uid}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
    ];
    return [...limits, ...args, ...drop, '--no-new-privs', '--'];
  }

  /**
   * Whether a sandbox can be made here: runs `true` in one. The reason when not, for the start log. Not awaited by
   * start: the child takes tens of milliseconds that serving need not wait for; a job waits for the answer.
   */
  probe(): Promise<string | null> {
    if (!this.isolated) return Promise.resolve(null);
    const filter = this.filter;
    if (filter === null)
      return Promise.resolve(`no user-namespace filter is written for the ${process.arch} architecture`);
    const [command, ...args] = [...this.launcher({ writable: [], readOnly: [], chdir: null }, true), '/bin/true'];
    const stdio = Array.from({ length: FILTER_FD + 1 }, (_, fd) => (fd === 2 || fd === FILTER_FD ? 'pipe' : 'ignore'));
    return new Promise((resolve) => {
      const child = spawn(command as string, args, { stdio, timeout: 10_000, env: { PATH: '/usr/bin:/bin' } });
      let stderr = '';
      child.stdio[2]?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      // bwrap may fail before it reads the filter: the pipe then breaks, and the exit status says why.
      const filterPipe = (child.stdio as unknown as Array<Writable | null>)[FILTER_FD];
      filterPipe?.on('error', () => {});
      filterPipe?.end(filter);
      // A child that could not start has a string code (ENOENT); one that ran, its exit status or the signal.
      child.once('error', (error) => resolve(`${command}: ${error.message}`));
      child.once('close', (code, signal) => {
        if (code === 0) resolve(null);
        else resolve(`${this.options.bwrapPath} exited ${code ?? signal}: ${stderr.trim()}`);
      });
    });
  }

  #limits(inCgroup: boolean): string[] {
    const { addressSpaceBytes, openFiles, cpuSeconds, processes } = this.options.limits;
    const fsize = this.options.maxFileBytes;
    return [
      '/usr/bin/prlimit',
      `--as=${addressSpaceBytes}`,
      `--nofile=${openFiles}`,
      `--cpu=${cpuSeconds}`,
      `--fsize=${fsize}`,
      ...(inCgroup ? [] : [`--nproc=${processes}`]),
      '--',
    ];
  }

  #isolation(): string[] {
    const args = [
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--new-session',
      '--die-with-parent',
      '--add-seccomp-fd',
      String(FILTER_FD),
    ];
    if (this.options.network === 'none') args.push('--unshare-net');
    // Unprivileged bwrap needs a user namespace to mount; root does not, and must not map the job to uid 0.
    if (!runsAsRoot()) args.push('--unshare-user', '--disable-userns', '--cap-drop', 'ALL');
    for (const dir of SYSTEM_DIRS) args.push(...systemMount(dir));
    // Parents of a nested entry (/etc/ssl for /etc/ssl/certs) are made 0755 first, as for the job's own dirs.
    const present = ETC_FILES.filter((file) => existsSync(file));
    for (const dir of ancestors(present)) args.push('--perms', '0755', '--dir', dir);
    for (const file of present) args.push('--ro-bind', file, file);
    for (const path of this.options.readOnlyPaths) args.push('--ro-bind', path, path);
    // /tmp is world-writable with the sticky bit, as on the host (FHS 3.0, 3.18): bwrap would make it root's 0755
    // when it runs as root, and the job uid could then not write there at all.
    const tmp = ['--perms', '1777', '--size', String(this.options.limits.tmpBytes), '--tmpfs', '/tmp'];
    args.push('--proc', '/proc', '--dev', '/dev', ...tmp);
    return args;
  }
}

/** Every ancestor dir of the paths, shallowest first, without `/`. */
function ancestors(paths: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const path of paths) for (let dir = dirname(path); dir !== '/'; dir = dirname(dir)) dirs.add(dir);
  return [...dirs].sort((a, b) => a.split('/').length - b.split('/').length);
}

/** Merged-/usr systems have /bin → usr/bin: keep it a symlink rather than binding the target twice. */
function systemMount(dir: string): string[] {
  try {
    if (lstatSync(dir).isSymbolicLink()) return ['--symlink', readlinkSync(dir), dir];
    return ['--ro-bind', dir, dir];
  } catch {
    return [];
  }
}

/** POSIX shell single-quoting: the supervisor script names fixed paths and options, never the entrypoint. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
