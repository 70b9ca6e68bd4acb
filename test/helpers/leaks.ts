/**
 * What a gateway leaves behind once closed. Each test gateway runs inside a ResourceScope: every libuv handle and
 * timer created while its code runs (AsyncLocalStorage follows the gateway's callbacks and promises), or triggered
 * by one of its handles (an accepted connection is triggered by the server's handle, not created in its context),
 * belongs to it — so a second gateway, a peer or the test's own client in the same process are never counted.
 * After close, the scope must hold no live socket, server, timer or child process, and no process may remain in the
 * process group of a child it started (job runs are group leaders: a grandchild outlives its parent).
 * Node's async_hooks (https://nodejs.org/api/async_hooks.html) report a handle's `destroy` once libuv has closed it.
 */
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { processes } from './processes.ts';
import { waitFor } from './wait.ts';

/** Handles that stay open (or keep the loop alive) until closed; requests (FSREQ, WRITEWRAP...) end by themselves. */
const HELD_TYPES = new Set([
  'TCPWRAP',
  'TCPSERVERWRAP',
  'PIPEWRAP',
  'PIPESERVERWRAP',
  'UDPWRAP',
  'PROCESSWRAP',
  'SIGNALWRAP',
  'FSEVENTWRAP',
  'STATWATCHER',
  'WORKER',
  'Timeout',
  'Immediate',
]);

interface Held {
  readonly type: string;
  readonly resource: any;
}

const current = new AsyncLocalStorage<ResourceScope>();
const owners = new Map<number, ResourceScope>();

export class ResourceScope {
  readonly held = new Map<number, Held>();
  /** Process handles of every child started in the scope, for their pids once spawned. */
  readonly children: any[] = [];

  run<T>(fn: () => T): T {
    ensureHook();
    return current.run(this, fn);
  }

  /** Children a closed gateway left running on purpose (job runs outlive a restart) are watched by the next one. */
  adoptChildren(from: ResourceScope): void {
    for (const [id, held] of from.held) {
      if (held.type !== 'PROCESSWRAP') continue;
      from.held.delete(id);
      this.held.set(id, held);
      owners.set(id, this);
    }
    this.children.push(...from.children);
  }
}

let hookEnabled = false;
function ensureHook(): void {
  if (hookEnabled) return;
  hookEnabled = true;
  // Promises are left out (trackPromises: false): they hold nothing open, and tracking them costs every await.
  createHook({
    init(asyncId, type, triggerAsyncId, resource) {
      const owner = current.getStore() ?? owners.get(triggerAsyncId);
      if (!owner) return;
      owners.set(asyncId, owner);
      if (HELD_TYPES.has(type)) owner.held.set(asyncId, { type, resource });
      if (type === 'PROCESSWRAP') owner.children.push(resource);
    },
    destroy(asyncId) {
      owners.get(asyncId)?.held.delete(asyncId);
      owners.delete(asyncId);
    },
    trackPromises: false,
  } as Parameters<typeof createHook>[0]).enable();
}

/**
 * AbortSignal.timeout() arms an unref'd timer that Node never clears early: it holds only a WeakRef to its signal and
 * goes when it fires (https://nodejs.org/api/globals.html#abortsignaltimeoutdelay). Libraries (jose's remote JWKS)
 * use one per call, so such a timer is no leak; it is recognised by its callback, learnt from one made here.
 */
let abortTimeoutSource: string | null = null;
function isAbortSignalTimeout(held: Held): boolean {
  if (abortTimeoutSource === null) {
    const probe = new ResourceScope();
    probe.run(() => AbortSignal.timeout(1));
    const timer = [...probe.held.values()].find((h) => h.type === 'Timeout');
    abortTimeoutSource = timer ? String(timer.resource._onTimeout) : '';
  }
  return held.type === 'Timeout' && !held.resource.hasRef() && String(held.resource._onTimeout) === abortTimeoutSource;
}

/**
 * undici's HTTP/2 client arms each stream's body timeout with stream.setTimeout(), and Node ignores setTimeout(0) on a
 * destroyed stream, so that timer outlives the closed stream until it fires (at most the peer timeout). It holds no
 * connection: on a destroyed client stream it is not counted; on an open one it is.
 */
function isSpentStreamTimer(held: Held): boolean {
  const target = held.resource._timerArgs?.[0];
  return held.type === 'Timeout' && target?.constructor?.name === 'ClientHttp2Stream' && target.destroyed === true;
}

/** libuv reports a closed handle's destroy on a later turn of the loop, so leftovers get a short while to go. */
const SETTLE_MS = 2000;

/** Throws naming everything `scope` still holds after its owner (`what`) closed. */
export async function assertNothingLeft(scope: ResourceScope, what: string, options: { keepChildren?: boolean } = {}) {
  const kept = (h: Held) => options.keepChildren === true && h.type === 'PROCESSWRAP';
  const counted = (h: Held) => !kept(h) && !isAbortSignalTimeout(h) && !isSpentStreamTimer(h);
  const strays = () => (options.keepChildren ? [] : strayGroupMembers(scope));
  const leftovers = () => [...[...scope.held.values()].filter(counted).map(describe), ...strays()];
  const found = await waitFor(() => leftovers().length === 0, { timeoutMs: SETTLE_MS }).then(
    () => [],
    () => leftovers(),
  );
  if (found.length > 0) throw new Error(`${what} left behind after close:\n  ${found.join('\n  ')}`);
}

function describe({ type, resource }: Held): string {
  switch (type) {
    case 'TCPWRAP':
      return `an open TCP connection ${address(resource, 'getsockname')} ↔ ${address(resource, 'getpeername')}`;
    case 'TCPSERVERWRAP':
      return `a listening TCP server on ${address(resource, 'getsockname')}`;
    case 'PROCESSWRAP':
      return `a running child process, pid ${resource.pid}`;
    case 'Timeout': {
      const repeat = resource._repeat ? 'an interval' : 'a timer';
      const on = resource._timerArgs?.[0]?.constructor?.name;
      const owner = on ? ` on a ${on}` : '';
      return `${repeat} of ${resource._idleTimeout} ms calling ${callbackName(resource._onTimeout)}${owner}`;
    }
    case 'Immediate':
      return `a pending setImmediate calling ${callbackName(resource._onImmediate)}`;
    default:
      return `an open ${type} handle`;
  }
}

function address(handle: any, method: 'getsockname' | 'getpeername'): string {
  const out: { address?: string; port?: number } = {};
  return handle[method]?.(out) === 0 ? `${out.address}:${out.port}` : '?';
}

function callbackName(fn: unknown): string {
  if (typeof fn !== 'function') return 'nothing';
  const source = String(fn).replace(/\s+/g, ' ');
  return `${fn.name || 'an anonymous function'} (${source.slice(0, 100)})`;
}

/** Processes (alive, not zombies) in the process group of a child the scope started. */
function strayGroupMembers(scope: ResourceScope): string[] {
  const groups = new Set(scope.children.map((handle) => handle.pid).filter((pid) => typeof pid === 'number'));
  if (groups.size === 0) return [];
  return processes()
    .filter((p) => groups.has(p.group) && !p.zombie)
    .map((p) => `process ${p.pid} ${p.name} in group ${p.group}`);
}
