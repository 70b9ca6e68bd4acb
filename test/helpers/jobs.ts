/** Job test helpers: an executor user, polling until a job settles. */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AUTHZ } from '../../domains/authz/index.ts';
import type { TestGateway, TestResponse } from './gateway.ts';

export const MARKER = 'KZ_MESH_RUN_ON_JSON::';
export const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'STOPPED']);

/** Whether a process is still running (a zombie awaiting its reaper counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
}

/**
 * Host pids of every live process of a job: those whose environment carries its PLATFORM_JOB_ID (the
 * supervisor, bwrap and everything the job started, daemons that left its session included).
 */
export function jobProcesses(jobId: string): number[] {
  const needle = `\0PLATFORM_JOB_ID=${jobId}\0`;
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return `\0${readFileSync(`/proc/${name}/environ`, 'latin1')}`.includes(needle) && alive(Number(name));
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** The host pid of a job process that knows itself as `sandboxPid` (`$$` in its own pid namespace). */
export function hostPid(jobId: string, sandboxPid: number): number {
  for (const pid of jobProcesses(jobId)) {
    const nspid = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]?.split(/\s+/) ?? [];
    if (nspid.length > 1 && Number(nspid.at(-1)) === sandboxPid) return pid;
  }
  throw new Error(`job ${jobId} has no process ${sandboxPid}`);
}

/** A non-admin user holding cluster_jobs:__all__#executor: the relation that lets a user submit jobs. */
export async function executorToken(
  gw: TestGateway,
  username: string,
  attributes: Record<string, unknown> = {},
): Promise<{ token: string; id: string }> {
  const user = await gw.userToken(username, { attributes });
  gw.gateway.deps.services.get(AUTHZ).write([
    {
      subject: { namespace: 'user', id: user.id },
      relation: 'executor',
      object: { namespace: 'cluster_jobs', id: '__all__' },
    },
  ]);
  return user;
}

/** Polls /status until `done(body)` holds; fails with the last body after `timeoutMs`. */
export async function waitFor(
  gw: TestGateway,
  token: string,
  jobId: string,
  done: (body: any) => boolean = (b) => TERMINAL.has(b.status),
  timeoutMs = 60_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: TestResponse | undefined;
  while (Date.now() < deadline) {
    last = await gw.request('GET', `/api/cluster/jobs/${jobId}/status`, { token });
    if (last.status !== 200) throw new Error(`status of ${jobId}: ${last.status} ${last.text}`);
    if (done(last.json)) return last.json;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${jobId} did not settle in ${timeoutMs} ms; last: ${last?.text}`);
}

export function submit(gw: TestGateway, token: string | null, json: Record<string, unknown>): Promise<TestResponse> {
  return gw.request('POST', '/api/cluster/jobs/submit', { token, json });
}

/** A python one-liner entrypoint, quoted for `sh -c`. */
export function py(code: string): string {
  return `python3 -c '${code.replaceAll("'", `'"'"'`)}'`;
}

const MAKE_WHEEL = fileURLToPath(new URL('../fixtures/jobs/make_wheel.py', import.meta.url));

/**
 * A throwaway wheel folder: build(name, version, value) returns the wheel's sha256; catalog() writes the catalog file.
 */
export function wheelFolder(t: { after(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-wheels-'));
  // The install step runs as the sandbox uid, which must be able to read the operator's wheels (docs/jobs.md).
  chmodSync(dir, 0o755);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const build = (name: string, version: string, value: string) =>
    execFileSync('python3', [MAKE_WHEEL, dir, name, version, value], { encoding: 'utf8' })
      .trim()
      .split(' ')[1] as string;
  const catalog = (entries: unknown[]) => {
    const file = join(dir, 'catalog.json');
    writeFileSync(file, JSON.stringify(entries));
    return file;
  };
  return { dir, build, catalog };
}
