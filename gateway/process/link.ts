/**
 * The local channel between the processes of one gateway: a worker asks the
 * primary to do what only the primary may do (start, stop or purge a local
 * job; open a legacy port), the primary tells every worker what changed in
 * what it owns (a job's state), and the primary gathers what each worker
 * alone knows (its metrics). Calls, notices and queries are typed keys, like
 * the service keys, so a domain declares what it asks for and answers once.
 *
 * The transport is node:cluster's IPC pipe (a socketpair the primary made at
 * fork: only the two processes hold it), with `advanced` serialization
 * (structured clone), so Dates and Buffers cross as they are. A refusal the
 * owner answers with an ApiError is re-thrown in the worker as the same
 * ApiError (status, reason, fields), so the client sees what a
 * single-process gateway would have said.
 */
import { ApiError, type ErrorExtra } from '../errors/api-error.ts';

/** A request a worker sends and the primary answers. */
export interface OwnerCall<Req, Res> {
  readonly name: string;
  /** Phantom fields carrying the types; never set. */
  readonly __req?: Req;
  readonly __res?: Res;
}

/** A message the primary sends to every worker. */
export interface OwnerNotice<T> {
  readonly name: string;
  readonly __payload?: T;
}

/** A question the primary asks every worker; each answers from its own state. */
export interface WorkerQuery<Res> {
  readonly name: string;
  readonly __res?: Res;
}

export function ownerCall<Req, Res>(name: string): OwnerCall<Req, Res> {
  return { name };
}

export function ownerNotice<T>(name: string): OwnerNotice<T> {
  return { name };
}

export function workerQuery<Res>(name: string): WorkerQuery<Res> {
  return { name };
}

/** The primary's side: it answers calls and sends notices. */
export interface OwnerSide {
  readonly role: 'primary';
  answer<Req, Res>(call: OwnerCall<Req, Res>, handler: (request: Req) => Promise<Res> | Res): void;
  /**
   * Sends the notice to every worker; resolves once each has run its listeners (or exited, or let the ack wait
   * pass), so a caller that awaits it knows the workers have acted (a cancel has reached their streams).
   */
  notify<T>(notice: OwnerNotice<T>, payload: T): Promise<void>;
  /** Asks every connected worker; resolves with the answers that came in time (a stuck worker's is left out). */
  gather<Res>(query: WorkerQuery<Res>): Promise<WorkerAnswer<Res>[]>;
  /** Called with a worker's id once it has exited (crashed, or replaced at a reload). */
  onWorkerExit(listener: (worker: number) => void): void;
}

/** A worker's answer to a query, with the worker's id (node:cluster's, never reused by one primary). */
export interface WorkerAnswer<Res> {
  readonly worker: number;
  readonly value: Res;
}

/** A worker's side: it asks the primary and hears its notices. */
export interface WorkerSide {
  readonly role: 'worker';
  ask<Req, Res>(call: OwnerCall<Req, Res>, request: Req): Promise<Res>;
  /** Returns an unsubscribe. */
  listen<T>(notice: OwnerNotice<T>, listener: (payload: T) => void): () => void;
  /** Answers the primary's query; one answerer per query. */
  reply<Res>(query: WorkerQuery<Res>, answer: () => Promise<Res> | Res): void;
}

/**
 * Where this process stands: `single` runs everything itself (one process, or a CLI command); `primary` owns the
 * once-only work and serves no main listener; `worker` serves the ports and reaches the owner through `link`.
 */
export type ProcessPlace = { readonly role: 'single' } | OwnerSide | WorkerSide;

export const SINGLE_PROCESS: ProcessPlace = { role: 'single' };

/** The wire forms (internal to the link's two ends). */
export type LinkMessage =
  | { readonly link: 'call'; readonly id: number; readonly name: string; readonly request: unknown }
  | { readonly link: 'answer'; readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly link: 'answer'; readonly id: number; readonly ok: false; readonly error: CarriedError }
  | { readonly link: 'notice'; readonly id: number; readonly name: string; readonly payload: unknown }
  | { readonly link: 'ack'; readonly id: number }
  | { readonly link: 'query'; readonly id: number; readonly name: string }
  | { readonly link: 'reply'; readonly id: number; readonly ok: boolean; readonly value?: unknown };

/** An error as it crosses: an ApiError keeps its reason and fields; anything else only its message (no stack). */
export interface CarriedError {
  readonly status?: number;
  readonly reason?: string;
  readonly extra?: ErrorExtra;
  readonly stringDetail?: string;
  readonly fieldsBesideDetail?: boolean;
  readonly message: string;
}

export function isLinkMessage(value: unknown): value is LinkMessage {
  return typeof value === 'object' && value !== null && 'link' in value;
}

export function carryError(error: unknown): CarriedError {
  if (error instanceof ApiError) {
    return {
      status: error.status,
      reason: error.reason,
      extra: error.extra,
      stringDetail: error.stringDetail,
      fieldsBesideDetail: error.fieldsBesideDetail,
      message: error.message,
    };
  }
  return { message: error instanceof Error ? error.message : String(error) };
}

export function restoreError(carried: CarriedError): Error {
  if (carried.status !== undefined && carried.reason !== undefined) {
    return new ApiError(carried.status, carried.reason, carried.extra, {
      stringDetail: carried.stringDetail,
      fieldsBesideDetail: carried.fieldsBesideDetail,
    });
  }
  return new Error(`the primary process failed: ${carried.message}`);
}
