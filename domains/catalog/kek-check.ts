/**
 * Which KEK files a database's secrets need, and whether a KEK folder holds
 * them: every version the ledger has not retired (the active one and any a
 * rotation is still moving secrets off), each checked against the ledger's
 * key check. Backups name these files without copying them, and a restore
 * tells the operator which ones to put back before start.
 */
import { existsSync } from 'node:fs';
import type { Db } from '../../gateway/db/open.ts';
import { keyCheck } from './crypto.ts';
import { createKekLedger } from './kek-ledger.ts';
import { KekRing, kekFileName } from './kek-ring.ts';

export interface KekFileStatus {
  version: number;
  /** The file name in the KEK folder: kek-v<N>.key. */
  file: string;
  /** ok: present and matching the database; mismatch: a different key; unreadable: bad mode or length. */
  state: 'ok' | 'missing' | 'mismatch' | 'unreadable';
}

export function checkKekFiles(db: Db, kekDir: string): KekFileStatus[] {
  const ring = existsSync(kekDir) ? new KekRing(kekDir) : null;
  const needed = createKekLedger(db)
    .list()
    .filter((row) => row.state !== 'retired');
  return needed.map((row) => {
    const file = kekFileName(row.version);
    let key: Buffer | null;
    try {
      key = ring?.get(row.version) ?? null;
    } catch {
      return { version: row.version, file, state: 'unreadable' };
    }
    if (!key) return { version: row.version, file, state: 'missing' };
    return { version: row.version, file, state: keyCheck(key) === row.check ? 'ok' : 'mismatch' };
  });
}
