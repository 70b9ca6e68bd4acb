/**
 * The two ends of the owner link over node:cluster's IPC pipe
 * (https://nodejs.org/api/cluster.html#workersendmessage-sendhandle-options-callback).
 * Messages that are not the link's (the cluster module's own) are ignored.
 */
import type { Worker } from 'node:cluster';
import { carryError, isLinkMessage, type LinkMessage, type OwnerCall, type OwnerNotice, type OwnerSide, restoreError, type WorkerSide } from './link.ts';

type Handler = (request: unknown) => Promise<unknown> | unknown;

/** The primary's end: answers every attached worker's calls; notices go to all workers still connected. */
export class PrimaryLink implements OwnerSide {
  readonly role = 'primary';
  readonly #handlers = new Map<string, Handler>();
  readonly #workers = new Set<Worker>();

  answer<Req, Res>(call: OwnerCall<Req, Res>, handler: (request: Req) => Promise<Res> | Res): void {
    if (this.#handlers.has(call.name)) throw new Error(`owner call '${call.name}' is answered twice`);
    this.#handlers.set(call.name, handler as Handler);
  }

  notify<T>(notice: OwnerNotice<T>, payload: T): void {
    const message: LinkMessage = { link: 'notice', name: notice.name, payload };
    for (const worker of this.#workers) if (worker.isConnected()) worker.send(message);
  }

  attach(worker: Worker): void {
    this.#workers.add(worker);
    worker.once('exit', () => this.#workers.delete(worker));
    worker.on('message', (message: unknown) => {
      if (isLinkMessage(message) && message.link === 'call') void this.#answer(worker, message);
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
