/**
 * The mesh hot path's read cache: every federation record that is not DELETED, in memory, indexed by id, by the
 * peer's cluster id and (PAIRED ones) by name, so each lookup a signed request or a selector makes is a map read.
 *
 * A write refreshes the one record it touched — the store calls `refresh(id)` right after its statement, so a revoke,
 * disconnect or delete is seen by the very next request; another process's write arrives on the change feed by id —
 * never the whole set. Writes of `last_activity`/`last_ping` alone change nothing a lookup reads: the store skips the
 * refresh and the feed triggers skip the publication (data/migrations, `changes_federations_update`). A full reload
 * happens only at start and when this process fell behind the feed's trim point.
 */
import type { KeyObject } from 'node:crypto';
import type { FederationRow, FederationStatus } from './store.ts';
import { type FederationRecordView, recordView } from './wire.ts';

export interface CachedRecord {
  readonly row: FederationRow;
  readonly view: FederationRecordView;
}

/** What a refresh changed, for the parts that follow records (peer pools, collisions, reconciliation). */
export type RecordChange = (before: CachedRecord | undefined, after: CachedRecord | undefined) => void;

export interface RecordSource {
  get(id: string): FederationRow | undefined;
  byStatus(statuses: readonly FederationStatus[]): FederationRow[];
}

const LIVE: readonly FederationStatus[] = ['WAITING', 'PAIRING', 'PAIRED', 'DISCONNECTED'];

function addTo(map: Map<string, CachedRecord[]>, key: string, record: CachedRecord): void {
  const list = map.get(key);
  if (list) list.push(record);
  else map.set(key, [record]);
}

function removeFrom(map: Map<string, CachedRecord[]>, key: string, id: string): void {
  const rest = (map.get(key) ?? []).filter((r) => r.row.id !== id);
  if (rest.length > 0) map.set(key, rest);
  else map.delete(key);
}

export class RecordCache {
  readonly #byId = new Map<string, CachedRecord>();
  readonly #bySource = new Map<string, CachedRecord[]>();
  /** PAIRED records by remote_cluster_name: a name with two records is a collision. */
  readonly #pairedByName = new Map<string, CachedRecord[]>();
  readonly #keys = new Map<string, KeyObject | null>();
  readonly #listeners: RecordChange[] = [];
  #paired: readonly FederationRecordView[] | null = null;
  #loaded = false;

  constructor(
    private readonly source: RecordSource,
    private readonly openKey: (row: FederationRow) => KeyObject | null,
  ) {}

  /** Told of every record that changed (after the indexes are), including at load and reload. */
  onChange(listener: RecordChange): void {
    this.#listeners.push(listener);
  }

  get(id: string): CachedRecord | undefined {
    this.#load();
    return this.#byId.get(id);
  }

  /** Every record that is not DELETED. */
  all(): IterableIterator<CachedRecord> {
    this.#load();
    return this.#byId.values();
  }

  /** Non-DELETED records pinned to a peer's cluster id (lowercase). */
  bySource(remoteClusterId: string): readonly CachedRecord[] {
    this.#load();
    return this.#bySource.get(remoteClusterId) ?? [];
  }

  /** PAIRED records as frozen views; the same array until the PAIRED set or one of its records changes. */
  paired(): readonly FederationRecordView[] {
    this.#load();
    this.#paired ??= Object.freeze(
      [...this.#byId.values()].filter((r) => r.row.status === 'PAIRED').map((r) => r.view),
    );
    return this.#paired;
  }

  /** PAIRED records sharing `name` with another PAIRED record (empty when the name is unique). */
  collidingWith(name: string): readonly CachedRecord[] {
    this.#load();
    const named = this.#pairedByName.get(name) ?? [];
    return named.length > 1 ? named : [];
  }

  /** Names carried by more than one PAIRED record. */
  collisions(): string[] {
    this.#load();
    return [...this.#pairedByName].filter(([, records]) => records.length > 1).map(([name]) => name);
  }

  /** The record's PSK, opened once per version of the record. */
  key(id: string): KeyObject | null {
    const record = this.get(id);
    if (!record) return null;
    if (!this.#keys.has(id)) this.#keys.set(id, this.openKey(record.row));
    return this.#keys.get(id) ?? null;
  }

  /** Re-reads one record (after a write by this process, or a feed notice from another). */
  refresh(id: string): void {
    if (!this.#loaded) return;
    const row = this.source.get(id);
    this.#replace(id, row && row.status !== 'DELETED' ? row : undefined);
  }

  /** Everything again (start, or the feed's trim point passed this process by). */
  reload(): void {
    const rows = new Map(this.source.byStatus(LIVE).map((row) => [row.id, row]));
    const ids = new Set([...this.#byId.keys(), ...rows.keys()]);
    this.#loaded = true;
    for (const id of ids) this.#replace(id, rows.get(id));
  }

  #load(): void {
    if (!this.#loaded) this.reload();
  }

  #replace(id: string, row: FederationRow | undefined): void {
    const before = this.#byId.get(id);
    if (before) this.#unindex(before);
    this.#keys.delete(id);
    const after = row ? { row, view: Object.freeze(recordView(row)) } : undefined;
    if (after) this.#index(after);
    if (before?.row.status === 'PAIRED' || after?.row.status === 'PAIRED') this.#paired = null;
    for (const listener of this.#listeners) listener(before, after);
  }

  #index(record: CachedRecord): void {
    this.#byId.set(record.row.id, record);
    if (record.row.remoteClusterId) addTo(this.#bySource, record.row.remoteClusterId, record);
    if (record.row.status === 'PAIRED') addTo(this.#pairedByName, record.row.remoteClusterName, record);
  }

  #unindex(record: CachedRecord): void {
    this.#byId.delete(record.row.id);
    if (record.row.remoteClusterId) removeFrom(this.#bySource, record.row.remoteClusterId, record.row.id);
    if (record.row.status === 'PAIRED') removeFrom(this.#pairedByName, record.row.remoteClusterName, record.row.id);
  }
}
