/**
 * Where per-job cgroups are made. The host's own layout is used for real (on this project's machines: cgroup v1
 * memory and pids hierarchies beside a cgroup2 mount without those controllers). The cgroup v2 layout of an
 * operator's systemd host cannot be had here (a controller lives in one hierarchy only, and the host's mounts are
 * not ours to change), so its steps are checked against a tree of plain files laid out like a delegated cgroup:
 * which files the gateway writes, and where.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { JobCgroups } from '../../../../../../domains/jobs/runtimes/local/cgroups.ts';

const caps = { memoryBytes: 64 * 1024 * 1024, processes: 32 };

/** A fake /proc/self (mountinfo, cgroup) and cgroup mounts under a temp dir; `files` are laid out below it. */
function fakeHost(
  t: { after(fn: () => void): void },
  cgroup: string,
  mountinfo: string[],
  files: Record<string, string>,
) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-cgroups-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const proc = join(root, 'proc');
  mkdirSync(proc);
  writeFileSync(join(proc, 'cgroup'), cgroup);
  writeFileSync(join(proc, 'mountinfo'), mountinfo.map((line) => line.replaceAll('{root}', root)).join('\n'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return { root, proc, read: (path: string) => readFileSync(join(root, path), 'utf8') };
}

test('this host: a job cgroup is made with the caps and removed again', () => {
  const cgroups = JobCgroups.detect(caps);
  assert.equal(cgroups.problem, null);
  const jobId = `unit-${process.pid}`;
  const made = cgroups.create(jobId, caps);
  try {
    const dirs = made.procs.map((procs) => join(procs, '..'));
    assert.ok(
      dirs.every((dir) => dir.endsWith(`/meshgate-job-${jobId}`)),
      dirs.join(' '),
    );
    const value = (file: string) => Number(readFileSync(dirs.map((d) => join(d, file)).find(existsSync) ?? '', 'utf8'));
    assert.equal(value('pids.max'), caps.processes);
    assert.equal(value(cgroups.version === 'v2' ? 'memory.max' : 'memory.limit_in_bytes'), caps.memoryBytes);
  } finally {
    assert.equal(cgroups.release(jobId), true, 'an empty cgroup is removed');
  }
  assert.ok(made.procs.every((procs) => !existsSync(join(procs, '..'))));
});

test('cgroup v2 delegated to the service: the gateway moves into a leaf, enables memory and pids for jobs', (t) => {
  const service = 'cg/system.slice/meshgate.service';
  const host = fakeHost(
    t,
    '0::/system.slice/meshgate.service\n',
    ['41 31 0:38 / {root}/cg rw,relatime - cgroup2 cgroup2 rw'],
    {
      [`${service}/cgroup.controllers`]: 'cpu io memory pids\n',
      [`${service}/cgroup.subtree_control`]: '\n',
      [`${service}/cgroup.procs`]: `${process.pid}\n`,
    },
  );
  const cgroups = JobCgroups.detect(caps, host.proc);
  assert.deepEqual([cgroups.version, cgroups.problem], ['v2', null]);
  assert.equal(host.read(`${service}/gateway/cgroup.procs`), String(process.pid), 'its processes moved into the leaf');
  assert.equal(host.read(`${service}/cgroup.subtree_control`), '+memory +pids');
  writeFileSync(join(host.root, `${service}/cgroup.subtree_control`), 'memory pids\n');
  const job = cgroups.create('job-a', caps);
  assert.deepEqual(job.procs, [join(host.root, service, 'meshgate-job-job-a', 'cgroup.procs')]);
  assert.equal(host.read(`${service}/meshgate-job-job-a/memory.max`), String(caps.memoryBytes));
  assert.equal(host.read(`${service}/meshgate-job-job-a/pids.max`), String(caps.processes));
  // A gateway started again from that leaf keeps the layout instead of nesting another one.
  writeFileSync(join(host.proc, 'cgroup'), '0::/system.slice/meshgate.service/gateway\n');
  const again = JobCgroups.detect(caps, host.proc);
  assert.equal(again.create('job-b', caps).procs[0], join(host.root, service, 'meshgate-job-job-b', 'cgroup.procs'));
});

test('cgroup v2 without delegation: the root cgroup, or no memory and pids controllers, makes no job cgroup', (t) => {
  const inRoot = fakeHost(t, '0::/\n', ['41 31 0:38 / {root}/cg rw - cgroup2 cgroup2 rw'], {
    'cg/cgroup.controllers': 'memory pids\n',
  });
  const root = JobCgroups.detect(caps, inRoot.proc);
  assert.equal(root.version, null);
  assert.match(root.problem ?? '', /root cgroup v2/);
  const bare = fakeHost(t, '0::/user.slice\n', ['41 31 0:38 / {root}/cg rw - cgroup2 cgroup2 rw'], {
    'cg/user.slice/cgroup.controllers': 'cpu\n',
  });
  assert.match(JobCgroups.detect(caps, bare.proc).problem ?? '', /lacks the memory and pids controller/);
  // A cgroup holding processes that are not the gateway's (a login session's shell: pid 1 here) is not taken over.
  const shared = fakeHost(t, '0::/user.slice/session-1.scope\n', ['41 31 0:38 / {root}/cg rw - cgroup2 cgroup2 rw'], {
    'cg/user.slice/session-1.scope/cgroup.controllers': 'memory pids\n',
    'cg/user.slice/session-1.scope/cgroup.subtree_control': '\n',
    'cg/user.slice/session-1.scope/cgroup.procs': `1\n${process.pid}\n`,
  });
  assert.match(JobCgroups.detect(caps, shared.proc).problem ?? '', /holds other processes \(1\): not delegated/);
  assert.equal(existsSync(join(shared.root, 'cg/user.slice/session-1.scope/gateway')), false, 'nothing was moved');
  assert.throws(() => root.create('job', caps), /no cgroup can be made/);
});

test('hybrid host: v2 has no memory controller, so jobs go below the v1 memory and pids cgroups', (t) => {
  const host = fakeHost(
    t,
    '8:pids:/\n4:memory:/sessions/42\n0::/\n',
    [
      '35 31 0:32 / {root}/memory rw,relatime - cgroup cgroup rw,memory',
      '39 31 0:36 / {root}/pids rw,relatime - cgroup cgroup rw,pids',
      '41 31 0:38 / {root}/unified rw,relatime - cgroup2 cgroup2 rw',
    ],
    { 'unified/cgroup.controllers': 'hugetlb\n', 'memory/sessions/42/tasks': '', 'pids/tasks': '' },
  );
  const cgroups = JobCgroups.detect(caps, host.proc);
  assert.deepEqual([cgroups.version, cgroups.problem], ['v1', null]);
  const job = cgroups.create('job-c', caps);
  assert.deepEqual(job.procs, [
    join(host.root, 'memory/sessions/42/meshgate-job-job-c/cgroup.procs'),
    join(host.root, 'pids/meshgate-job-job-c/cgroup.procs'),
  ]);
  assert.equal(host.read('memory/sessions/42/meshgate-job-job-c/memory.limit_in_bytes'), String(caps.memoryBytes));
  assert.equal(host.read('pids/meshgate-job-job-c/pids.max'), String(caps.processes));
});
