/** The messages between PgSyncConnection and its worker thread (bridge-worker.ts). */
import type { ConnectionOptions } from 'node:tls';

export interface BridgeStart {
  readonly url: string;
  /** Four bytes the worker raises (to 1) after posting each answer. */
  readonly flag: SharedArrayBuffer;
  readonly ssl: ConnectionOptions | undefined;
}

export type BridgeRequest =
  | {
      readonly kind: 'query';
      readonly id: number;
      readonly sql: string;
      readonly params: unknown[];
      /** The statement fails after this long (the connection is then replaced: the server may still be busy). */
      readonly timeoutMs: number;
      readonly arrays: boolean;
    }
  | { readonly kind: 'end'; readonly id: number };

export type BridgeAnswer =
  | {
      readonly id: number;
      readonly rows: unknown[];
      readonly rowCount: number;
      /** The bytea columns (by position for array rows, by name otherwise): they arrive as Uint8Array. */
      readonly bytea: (number | string)[];
    }
  | { readonly id: number; readonly error: { readonly message: string; readonly code: string } };
