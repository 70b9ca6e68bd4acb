/**
 * KEK access for the running gateway and the rotate-kek command: the key
 * files (kek-ring.ts) checked against the ledger (kek-ledger.ts). The active
 * version is read from the ledger on every wrap, so a rotation run by
 * `meshgate rotate-kek` beside a live gateway takes effect at once.
 */
import { generateKey, type Kek, keyCheck } from './crypto.ts';
import type { KekLedger } from './kek-ledger.ts';
import type { KekRing } from './kek-ring.ts';

export class KeyManager {
  constructor(
    readonly ring: KekRing,
    readonly ledger: KekLedger,
    private readonly now: () => Date,
  ) {}

  /**
   * At start: creates version 1 on a fresh install; otherwise every version
   * still in use must have its key file, with the recorded key-check value,
   * or start fails (a wrong or missing key file must not go unnoticed).
   * Key files of retired versions left by an interrupted rotation are deleted.
   */
  ensureReady(): void {
    const rows = this.ledger.list();
    if (rows.length === 0) {
      const version = Math.max(0, ...this.ring.versions()) + 1;
      const key = generateKey();
      this.ring.add(version, key);
      this.ledger.activate(version, keyCheck(key), this.now().toISOString());
      return;
    }
    for (const row of rows) {
      if (row.state === 'retired') this.ring.remove(row.version);
      else this.get(row.version);
    }
  }

  active(): Kek {
    const row = this.ledger.active();
    if (!row) throw new Error('catalog: no active key-encryption key (run the gateway once to create one)');
    return this.get(row.version);
  }

  get(version: number): Kek {
    const key = this.ring.get(version);
    if (!key) throw new Error(`catalog: key file for KEK version ${version} is missing from ${this.ring.dir}`);
    const row = this.ledger.list().find((r) => r.version === version);
    if (row && row.check !== keyCheck(key))
      throw new Error(`catalog: key file for KEK version ${version} does not match the database`);
    return { version, key };
  }
}
