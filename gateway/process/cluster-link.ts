/**
 * The two ends of the owner link over node:cluster's IPC pipe
 * (https://nodejs.org/api/cluster.html#workersendmessage-sendhandle-options-callback).
 * Messages that are not the link's (the cluster module's own) are ignored.
 */
import type { Worker } from 'node:cluster';
import {
  carryError,
  isLinkMessage,
  type LinkMessage,
  type OwnerCall,
  type OwnerNotice,
  type OwnerSide,
  restoreError,
  type WorkerSide,
} from './link.ts';

type Handler = (request: unknown) => Promise<unknown> | unknown;

/** How long a notice waits for a worker's acknowledgement. */
const ACK_WAIT_MS = 2000;

/** The primary's end: answers every attached worker's calls; notices go to all workers still connected. */
export class PrimaryLink implements OwnerSide {
  readonly role = 'primary';
  readonly #handlers = new Map<string, Handler>();
  /** Each attached worker with its notices waiting for an acknowledgement (by notice id). */
  readonly #workers = new Map<Worker, Map<number, () => void>>();
  #nextNotice = 1;

  answer<Req, Res>(call: OwnerCall<Req, Res>, handler: (request: Req) => Promise<Res> | Res): void {
    if (this.#handlers.has(call.name)) throw new Error(`owner call '${call.name}' is answered twice`);
    this.#handlers.set(call.name, handler as Handler);
  }

  notify<T>(notice: OwnerNotice<T>, payload: T): Promise<void> {
    const id = this.#nextNotice++;
    const message: LinkMessage = { link: 'notice', id, name: notice.name, payload };
    const sent = [...this.#workers].filter(([worker]) => worker.isConnected());
    const acked = sent.map(([, acks]) => this.#acked(acks, id));
    for (const [worker] of sent) worker.send(message);
    return Promise.all(acked).then(() => {});
  }

  attach(worker: Worker): void {
    const acks = new Map<number, () => void>();
    this.#workers.set(worker, acks);
    worker.once('exit', () => {
      this.#workers.delete(worker);
      for (const done of [...acks.values()]) done();
    });
    worker.on('message', (message: unknown) => {
      if (!isLinkMessage(message)) return;
      if (message.link === 'call') void this.#answer(worker, message);
      if (message.link === 'ack') acks.get(message.id)?.();
    });
  }

  /** Resolves when the worker acknowledges notice `id`, exits, or ACK_WAIT_MS passes (a stuck worker holds no one). */
  #acked(acks: Map<number, () => void>, id: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        acks.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ACK_WAIT_MS);
      acks.set(id, done);
    });
  }

  async #answer(worker: Worker, call: Extract<LinkMessage, { link: 'call' }>): Promise<void> {
    let answer: LinkMessage;
    try {
      const handler = this.#handlers.get(call.name);
      if (!handler) throw new Error(`no owner answers '${call.name}'`);
      answer = { link: 'answer', id: call.id, ok: true, value: await handler(call.request) };
    } catch (error) {
      answer = { link: 'answer', id: call.id, ok: false, error: carryError(error) };
    }
    // A worker that exited meanwhile (crash, replacement) no longer waits for its answer.
    if (worker.isConnected()) worker.send(answer);
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** A worker's end, over `process.send`; pending calls fail at once when the primary goes away. */
export class WorkerLink implements WorkerSide {
  readonly role = 'worker';
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Map<string, Set<(payload: unknown) => void>>();
  #nextId = 1;

  constructor(private readonly channel: NodeJS.Process = process) {
    channel.on('message', (message: unknown) => {
      if (isLinkMessage(message)) this.#receive(message);
    });
    channel.once('disconnect', () => {
      for (const pending of this.#pending.values()) pending.reject(new Error('the primary process is gone'));
      this.#pending.clear();
    });
  }

  ask<Req, Res>(call: OwnerCall<Req, Res>, request: Req): Promise<Res> {
    const send = this.channel.send?.bind(this.channel);
    if (!send || !this.channel.connected) return Promise.reject(new Error('the primary process is gone'));
    const id = this.#nextId++;
    return new Promise<Res>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      const message: LinkMessage = { link: 'call', id, name: call.name, request };
      send(message);
    });
  }

  listen<T>(notice: OwnerNotice<T>, listener: (payload: T) => void): () => void {
    const set = this.#listeners.get(notice.name) ?? new Set();
    this.#listeners.set(notice.name, set);
    const untyped = listener as (payload: unknown) => void;
    set.add(untyped);
    return () => set.delete(untyped);
  }

  #receive(message: LinkMessage): void {
    if (message.link === 'notice') {
      for (const listener of this.#listeners.get(message.name) ?? []) listener(message.payload);
      const ack: LinkMessage = { link: 'ack', id: message.id };
      if (this.channel.connected) this.channel.send?.(ack);
      return;
    }
    if (message.link !== 'answer') return;
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    this.#pending.delete(message.id);
    if (message.ok) pending.resolve(message.value);
    else pending.reject(restoreError(message.error));
  }
}
