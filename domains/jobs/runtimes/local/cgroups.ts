/**
 * Per-job cgroups: each local job (its supervisor, bwrap and everything the job starts) runs in a cgroup of its
 * own whose memory and process caps bind it alone, so a memory or fork bomb in one job never starves another
 * job or the gateway.
 *
 * Two layouts, chosen once at start:
 * - cgroup v2 (docs.kernel.org/admin-guide/cgroup-v2.html): the gateway's own cgroup (the `0::` line of
 *   /proc/self/cgroup), which the service manager must delegate to it (systemd `Delegate=yes`,
 *   systemd.resource-control(5)). The "no internal processes" rule lets a cgroup hand controllers to children
 *   only while it holds no process itself, so the gateway first moves its own processes into a `gateway` leaf,
 *   then enables `memory` and `pids` for the children, and makes `meshgate-job-<id>` beside that leaf with
 *   `memory.max`, `memory.swap.max` = 0 and `pids.max`.
 * - cgroup v1 (hybrid hosts, where memory and pids are still v1 hierarchies): `meshgate-job-<id>` below the
 *   gateway's own cgroup in each of the two hierarchies, with `memory.limit_in_bytes` (and
 *   `memory.memsw.limit_in_bytes` where swap is accounted) and `pids.max` (admin-guide/cgroup-v1/).
 *
 * The supervisor moves itself into the job's cgroup as its first step, before it starts anything, so nothing
 * of the job ever runs outside it. A cgroup is removed once the job's last process is gone.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export type CgroupVersion = 'v1' | 'v2';

export interface CgroupCaps {
  memoryBytes: number;
  processes: number;
}

/** A job's cgroup: the `cgroup.procs` files its supervisor writes its pid into (one per v1 hierarchy). */
export interface JobCgroup {
  version: CgroupVersion;
  procs: string[];
}

interface Layout {
  version: CgroupVersion;
  /** The dirs a job's cgroup is made in: one for v2, the memory and pids hierarchies' for v1. */
  parents: { memory: string; pids: string };
}

const CONTROLLERS = ['memory', 'pids'] as const;

/** One mount of /proc/self/mountinfo (proc(5)): its root within the hierarchy, mount point, type, super options. */
interface Mount {
  root: string;
  point: string;
  type: string;
  options: string[];
}

function mounts(procSelf: string): Mount[] {
  return readFileSync(join(procSelf, 'mountinfo'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [before, after = ''] = line.split(' - ');
      const fields = (before ?? '').split(' ');
      const [type = '', , superOptions = ''] = after.split(' ');
      const decoded = (path: string) =>
        path.replace(/\\(\d{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)));
      return {
        root: decoded(fields[3] ?? ''),
        point: decoded(fields[4] ?? ''),
        type,
        options: superOptions.split(','),
      };
    });
}

/** This process's cgroup per hierarchy (proc(5), /proc/pid/cgroup): `0` is v2, else the v1 controller list. */
function ownCgroups(procSelf: string): { hierarchy: string; controllers: string[]; path: string }[] {
  return readFileSync(join(procSelf, 'cgroup'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [hierarchy = '', controllers = '', ...path] = line.split(':');
      return { hierarchy, controllers: controllers.split(','), path: path.join(':') };
    });
}

/** The host path of a cgroup seen at `path` through a mount whose root is `mount.root`; null when outside it. */
function hostPath(mount: Mount, path: string): string | null {
  if (mount.root === '/') return join(mount.point, path);
  if (path === mount.root || path.startsWith(`${mount.root}/`)) return join(mount.point, path.slice(mount.root.length));
  return null;
}

function words(file: string): string[] {
  return readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean);
}

/** Whether the process is this one or one it started (its workers), following parent pids (proc(5), stat). */
function descendsFromGateway(pid: number): boolean {
  // This process checked before the end of the chain: a gateway that is pid 1 (a container's init) is its own.
  for (let at = pid, hops = 0; hops < 64; hops++) {
    if (at === process.pid) return true;
    if (at <= 1) return false;
    try {
      const stat = readFileSync(`/proc/${at}/stat`, 'utf8');
      at = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return true; // ended meanwhile: nothing left to take over
    }
  }
  return false;
}

/** The v2 layout, or why not. Moves the gateway's processes into a leaf the first time (see the module comment). */
function v2Layout(procSelf: string): Layout | string {
  const own = ownCgroups(procSelf).find((c) => c.hierarchy === '0');
  const mount = mounts(procSelf).find((m) => m.type === 'cgroup2');
  if (!own || !mount) return 'no cgroup v2 hierarchy';
  const dir = hostPath(mount, own.path);
  if (dir === null || own.path === '/') return 'the gateway runs in the root cgroup v2 (nothing is delegated to it)';
  // A gateway started again from its own leaf (a restart in the same process tree) keeps the layout it made.
  const parent = dirname(dir);
  if (
    basename(dir) === 'gateway' &&
    CONTROLLERS.every((c) => words(join(parent, 'cgroup.subtree_control')).includes(c))
  )
    return { version: 'v2', parents: { memory: parent, pids: parent } };
  const missing = CONTROLLERS.filter((c) => !words(join(dir, 'cgroup.controllers')).includes(c));
  if (missing.length > 0) return `its cgroup v2 ${own.path} lacks the ${missing.join(' and ')} controller`;
  const enabled = words(join(dir, 'cgroup.subtree_control'));
  if (CONTROLLERS.some((c) => !enabled.includes(c))) {
    // Root may write any cgroup, delegated or not: only one that holds nothing but the gateway's own processes
    // (the service's, under Delegate=yes) is taken over, never a login session's or a shared slice's.
    const procs = words(join(dir, 'cgroup.procs'));
    const foreign = procs.find((pid) => !descendsFromGateway(Number(pid)));
    if (foreign !== undefined) return `its cgroup v2 ${own.path} holds other processes (${foreign}): not delegated`;
    const leaf = join(dir, 'gateway');
    mkdirSync(leaf, { recursive: true });
    for (const pid of procs) {
      try {
        writeFileSync(join(leaf, 'cgroup.procs'), pid);
      } catch {
        // ESRCH: the process ended meanwhile.
      }
    }
    writeFileSync(join(dir, 'cgroup.subtree_control'), CONTROLLERS.map((c) => `+${c}`).join(' '));
  }
  return { version: 'v2', parents: { memory: dir, pids: dir } };
}

/** The v1 layout (the gateway's own cgroup in the memory and in the pids hierarchy), or why not. */
function v1Layout(procSelf: string): Layout | string {
  const all = mounts(procSelf);
  const own = ownCgroups(procSelf);
  const parent = (controller: string): string | null => {
    const mount = all.find((m) => m.type === 'cgroup' && m.options.includes(controller));
    const cgroup = own.find((c) => c.hierarchy !== '0' && c.controllers.includes(controller));
    return mount && cgroup ? hostPath(mount, cgroup.path) : null;
  };
  const memory = parent('memory');
  const pids = parent('pids');
  if (memory === null || pids === null) return 'no cgroup v1 memory and pids hierarchies';
  return { version: 'v1', parents: { memory, pids } };
}

/** The per-job cgroups of this host; `problem` says why none can be made (then jobs run without). */
export class JobCgroups {
  readonly #layout: Layout | null;
  readonly problem: string | null;

  private constructor(layout: Layout | null, problem: string | null) {
    this.#layout = layout;
    this.problem = problem;
  }

  /**
   * Finds the layout and proves it by making (and removing) one cgroup with the caps. `procSelf` is where this
   * process's mountinfo and cgroup files are read (a test points it at a cgroup tree of its own).
   */
  static detect(caps: CgroupCaps, procSelf = '/proc/self'): JobCgroups {
    const reasons: string[] = [];
    for (const find of [v2Layout, v1Layout]) {
      try {
        const layout = find(procSelf);
        if (typeof layout === 'string') {
          reasons.push(layout);
          continue;
        }
        const cgroups = new JobCgroups(layout, null);
        const probe = `probe-${process.pid}`;
        cgroups.create(probe, caps);
        cgroups.release(probe);
        return cgroups;
      } catch (error) {
        reasons.push((error as Error).message);
      }
    }
    return new JobCgroups(null, reasons.join('; '));
  }

  get version(): CgroupVersion | null {
    return this.#layout?.version ?? null;
  }

  /** Makes the job's cgroup with its caps; throws when it cannot (the caller decides whether the job may run). */
  create(jobId: string, caps: CgroupCaps): JobCgroup {
    const layout = this.#layout;
    if (layout === null) throw new Error(`no cgroup can be made: ${this.problem}`);
    const { memory, pids } = this.#dirs(jobId);
    for (const dir of new Set([memory, pids])) mkdirSync(dir, { recursive: true });
    try {
      if (layout.version === 'v2') {
        writeFileSync(join(memory, 'memory.max'), String(caps.memoryBytes));
        // Swap would let the job hold more than memory.max; absent when the kernel has no swap accounting.
        if (existsSync(join(memory, 'memory.swap.max'))) writeFileSync(join(memory, 'memory.swap.max'), '0');
        // An OOM kill takes the whole job, not one process of it, leaving the rest half-working (cgroup-v2.rst,
        // memory.oom.group).
        if (existsSync(join(memory, 'memory.oom.group'))) writeFileSync(join(memory, 'memory.oom.group'), '1');
      } else {
        writeFileSync(join(memory, 'memory.limit_in_bytes'), String(caps.memoryBytes));
        // memory + swap together; must not be below memory.limit_in_bytes, so it is written after it.
        const memsw = join(memory, 'memory.memsw.limit_in_bytes');
        if (existsSync(memsw)) writeFileSync(memsw, String(caps.memoryBytes));
      }
      writeFileSync(join(pids, 'pids.max'), String(caps.processes));
    } catch (error) {
      this.release(jobId);
      throw error;
    }
    return { version: layout.version, procs: [...new Set([memory, pids])].map((dir) => join(dir, 'cgroup.procs')) };
  }

  /** Removes the job's cgroup; false while a process of the job is still in it (try again later). */
  release(jobId: string): boolean {
    if (this.#layout === null) return true;
    let gone = true;
    for (const dir of new Set(Object.values(this.#dirs(jobId)))) {
      try {
        rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') gone = false;
      }
    }
    return gone;
  }

  #dirs(jobId: string): { memory: string; pids: string } {
    const { memory, pids } = (this.#layout as Layout).parents;
    return { memory: join(memory, `meshgate-job-${jobId}`), pids: join(pids, `meshgate-job-${jobId}`) };
  }
}
