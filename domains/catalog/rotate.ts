/**
 * KEK rotation: add a KEK version, rewrap every data key under it
 * without touching value ciphertexts, then retire the old versions and
 * delete their key files. Every step is durable before the next starts, so
 * a crash anywhere is finished by running the command again:
 *
 * 1. key file of the new version written (atomic rename), then the ledger
 *    switches active → retiring and inserts the new active version;
 *    a key file newer than the ledger (crash between the two) is adopted;
 * 2. data keys rewrapped in small transactions, each row compare-and-set
 *    on its old version (a live gateway may write meanwhile);
 * 3. in one transaction, when no row is left on an old version, the
 *    retiring versions become retired; then their key files are deleted.
 */
import { createServiceKey } from '../../gateway/services.ts';
import { generateKey, keyCheck, rewrapKey } from './crypto.ts';
import type { KeyManager } from './keys.ts';
import type { SecretStore } from './secrets-store.ts';

export interface RotationReport {
  /** The version every data key is now wrapped by. */
  active: number;
  /** True when this run finished a rotation an earlier run had begun. */
  resumed: boolean;
  rewrapped: number;
  retired: number[];
}

export interface RotationOptions {
  batchSize: number;
  /** Called after each committed batch with the running total (progress output, crash tests). */
  onProgress?(rewrapped: number): void;
}

/** Rotation over the catalog's own key manager and secret store, for `meshgate rotate-kek`. */
export const KEK_ROTATION = createServiceKey<(options: RotationOptions) => RotationReport>('kekRotation');

export function rotateKek(
  keys: KeyManager,
  secrets: SecretStore,
  now: () => Date,
  options: RotationOptions,
): RotationReport {
  const { target, resumed } = beginOrResume(keys, now);
  let rewrapped = 0;
  for (;;) {
    const batch = secrets.notOn(target.version, options.batchSize);
    if (batch.length === 0) {
      const retired = secrets.atomically(() =>
        secrets.countNotOn(target.version) === 0 ? keys.ledger.retire(now().toISOString()) : null,
      );
      if (retired === null) continue; // a row written meanwhile on an old version: rewrap it too
      for (const version of retired) keys.ring.remove(version);
      return { active: target.version, resumed, rewrapped, retired };
    }
    secrets.atomically(() => {
      for (const row of batch) {
        const wrapped = rewrapKey(row.urn, row.wrappedKey, keys.get(row.kekVersion), target);
        if (secrets.rewrap(row.urn, row.kekVersion, wrapped, target.version)) rewrapped++;
      }
    });
    options.onProgress?.(rewrapped);
  }
}

function beginOrResume(
  keys: KeyManager,
  now: () => Date,
): { target: ReturnType<KeyManager['active']>; resumed: boolean } {
  const rows = keys.ledger.list();
  if (rows.some((r) => r.state === 'retiring')) return { target: keys.active(), resumed: true };
  const known = Math.max(0, ...rows.map((r) => r.version));
  const orphan = keys.ring.versions().find((v) => v > known);
  const version = orphan ?? known + 1;
  let key = orphan === undefined ? null : keys.ring.get(orphan);
  if (!key) {
    key = generateKey();
    keys.ring.add(version, key);
  }
  keys.ledger.activate(version, keyCheck(key), now().toISOString());
  return { target: { version, key }, resumed: orphan !== undefined };
}
