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
  type WorkerAnswer,
  type WorkerQuery,
  type WorkerSide,
} from './link.ts';

type Handler = (request: unknown) => Promise<unknown> | unknown;
type Reply = Extract<LinkMessage, { link: 'reply' }>;
/** Settles what a worker owes for one message: its reply, or nothing (an ack, its exit, the wait ran out). */
type Settle = (reply?: Reply) => void;

/** How long a notice waits for a worker's acknowledgement, and a query for its reply. */
const ACK_WAIT_MS = 2000;

/**
 * The primary's end: answers every attached worker's calls; notices and queries go to all workers still connected.
 */
export class PrimaryLink implements OwnerSide {
  readonly role = 'primary';
  readonly #handlers = new Map<string, Handler>();
  /** Each attached worker with what it still owes: acknowledgements of notices, replies to queries (by id). */
  readonly #workers = new Map<Worker, Map<number, Settle>>();
  readonly #exitListeners: ((worker: number) => void)[] = [];
  #nextId = 1;

  answer<Req, Res>(call: OwnerCall<Req, Res>, handler: (request: Req) => Promise<Res> | Res): void {
    if (this.#handlers.has(call.name)) throw new Error(`owner call '${call.name}' is answered twice`);
    this.#handlers.set(call.name, handler as Handler);
  }

  notify<T>(notice: OwnerNotice<T>, payload: T): Promise<void> {
    return this.#sendAll({ link: 'notice', id: this.#nextId++, name: notice.name, payload }).then(() => {});
  }

  async gather<Res>(query: WorkerQuery<Res>): Promise<WorkerAnswer<Res>[]> {
    const replies = await this.#sendAll({ link: 'query', id: this.#nextId++, name: query.name });
    return replies.flatMap(({ worker, reply }) => (reply?.ok ? [{ worker, value: reply.value as Res }] : []));
  }

  onWorkerExit(listener: (worker: number) => void): void {
    this.#exitListeners.push(listener);
  }

  attach(worker: Worker): void {
    const owed = new Map<number, Settle>();
    this.#workers.set(worker, owed);
    worker.once('exit', () => {
      this.#workers.delete(worker);
      for (const settle of [...owed.values()]) settle();
      for (const listener of this.#exitListeners) listener(worker.id);
    });
    worker.on('message', (message: unknown) => {
      if (!isLinkMessage(message)) return;
      if (message.link === 'call') void this.#answer(worker, message);
      if (message.link === 'ack') owed.get(message.id)?.();
      if (message.link === 'reply') owed.get(message.id)?.(message);
    });
  }

  /** Sends to every connected worker; resolves with what each owed for it, once all have settled. */
  #sendAll(
    message: Extract<LinkMessage, { link: 'notice' | 'query' }>,
  ): Promise<{ worker: number; reply: Reply | undefined }[]> {
    const sent = [...this.#workers].filter(([worker]) => worker.isConnected());
    const settled = sent.map(([worker, owed]) =>
      this.#owedBy(owed, message.id).then((reply) => ({ worker: worker.id, reply })),
    );
    for (const [worker] of sent) worker.send(message);
    return Promise.all(settled);
  }

  /** Resolves when the worker settles message `id`, exits, or ACK_WAIT_MS passes (a stuck worker holds no one). */
  #owedBy(owed: Map<number, Settle>, id: number): Promise<Reply | undefined> {
    return new Promise((resolve) => {
      const settle: Settle = (reply) => {
        clearTimeout(timer);
        owed.delete(id);
        resolve(reply);
      };
      const timer = setTimeout(settle, ACK_WAIT_MS);
      owed.set(id, settle);
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
  readonly #replies = new Map<string, () => Promise<unknown> | unknown>();
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

  reply<Res>(query: WorkerQuery<Res>, answer: () => Promise<Res> | Res): void {
    if (this.#replies.has(query.name)) throw new Error(`worker query '${query.name}' is answered twice`);
    this.#replies.set(query.name, answer);
  }

  /** A query without an answerer, or whose answer failed, is replied to as not ok: the primary leaves it out. */
  async #replyTo(query: Extract<LinkMessage, { link: 'query' }>): Promise<void> {
    let reply: LinkMessage;
    try {
      const answer = this.#replies.get(query.name);
      reply = answer
        ? { link: 'reply', id: query.id, ok: true, value: await answer() }
        : { link: 'reply', id: query.id, ok: false };
    } catch {
      reply = { link: 'reply', id: query.id, ok: false };
    }
    if (this.channel.connected) this.channel.send?.(reply);
  }

  #receive(message: LinkMessage): void {
    if (message.link === 'query') {
      void this.#replyTo(message);
      return;
    }
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
