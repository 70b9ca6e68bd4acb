/**
 * What the owning process (the only one, or the primary under workers) does for federation on its own: purge
 * DELETED records once their retention passed, apply the declared set of the configuration at start (again, with
 * backoff, while a peer is still pending), report names two PAIRED records share when that appears and PAIRED
 * duplicates of a declared peer, and give WAITING records without a PSK key id lookup theirs.
 */
import type { Config } from '../../gateway/config/schema.ts';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import { type FederationContext, pskOf } from './context.ts';
import { applyDeclared, type DeclaredDeps } from './declared.ts';
import { readDeclaredFile } from './declared-file.ts';
import { pskKeyId } from './psk-key-id.ts';

/** The status reason the declared-set migration gives the duplicates it takes out of the set (data/migrations). */
export const DECLARED_DUPLICATE = 'declared_duplicate';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Retries of a declared set with a peer still pending: 2 s, doubling, at most every 5 minutes. */
const FIRST_RETRY_MS = 2000;
const MAX_RETRY_MS = 300_000;

/** The declared set of the configuration is applied as the gateway itself, a native administrator. */
const CONFIGURATION: Principal = {
  userId: 'configuration',
  username: 'federation.declaredFile',
  email: null,
  roles: ['admin'],
  attributes: {},
  tenantId: DEFAULT_TENANT,
  source: 'local',
  authMethod: 'pat',
};

/** Warns once when a name comes to be carried by more than one PAIRED record (selectors by it are ambiguous). */
export function watchNameCollisions(ctx: FederationContext): void {
  ctx.cache.onChange((before, after) => {
    if (after?.row.status !== 'PAIRED') return;
    const name = after.row.remoteClusterName;
    if (before?.row.status === 'PAIRED' && before.row.remoteClusterName === name) return;
    const colliding = ctx.cache.collidingWith(name);
    if (colliding.length < 2) return;
    ctx.logger.warn(
      { remote_cluster_name: name, federation_ids: colliding.map((r) => r.row.id) },
      'PAIRED federation records share a name: a mesh selector by that name is ambiguous, select by record id',
    );
  });
}

/**
 * Gives every WAITING receiver record without a key id lookup its own (psk-key-id.ts), once, at the owning process's
 * start: one made before key ids, or whose lookup a migration cleared (an earlier form was testable offline). It is
 * then found by an initiator that names its key id. Every process starts after the owner (workers are forked once it
 * is up), so none answers a pair call before this ran. A record whose PSK does not open (a damaged ciphertext, another
 * vault key) is logged and skipped: it cannot pair either way, and the gateway still starts.
 */
export function fillKeyIds(ctx: FederationContext): void {
  for (const row of ctx.records.missingKeyId()) {
    try {
      const key = pskOf(ctx, row);
      if (key) ctx.records.update(row.id, { pskKeyId: ctx.vault.keyIdLookup(pskKeyId(key)) });
    } catch (error) {
      ctx.logger.error(
        { federation_id: row.id, err: (error as Error).message },
        'federation record PSK does not open: its key id is not filled in, and it cannot pair',
      );
    }
  }
}

/**
 * Names, at the owning process's start, the PAIRED records the declared-set migration took out of the declared set
 * (status_reason declared_duplicate): two applies had paired the same peer twice, and each pairing still works, so
 * the migration ended neither. The operator keeps one and deletes the other (docs/federation.md).
 */
export function reportDeclaredDuplicates(ctx: FederationContext): void {
  const duplicates = ctx.records
    .byStatus(['PAIRED'])
    .filter((r) => r.statusReason === DECLARED_DUPLICATE)
    .map((r) => r.id);
  if (duplicates.length === 0) return;
  ctx.logger.warn(
    { federation_ids: duplicates },
    'PAIRED federation records duplicate a declared peer and are no longer declared: keep one pairing, delete the rest',
  );
}

export function startUpkeep(
  deps: DeclaredDeps,
  settings: Readonly<Config['federation']>,
  clusterName: string,
): { close(): void } {
  const { ctx } = deps;
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  // Nothing is scheduled once closed: an apply still running at close must not retry against a closed database.
  const later = (ms: number, run: () => void) => {
    if (closed) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timer.unref();
    timers.add(timer);
  };
  const purge = () => {
    const before = new Date(ctx.now().getTime() - settings.deletedRetentionDays * DAY_MS).toISOString();
    try {
      const purged = ctx.records.purgeDeleted(before);
      if (purged > 0) ctx.logger.info({ purged, before }, 'deleted federation records purged after their retention');
    } catch (error) {
      // A passing database failure: the next hour's purge takes them.
      ctx.logger.error({ err: (error as Error).message, before }, 'deleted federation records not purged');
    }
    later(HOUR_MS, purge);
  };
  purge();
  const file = settings.declaredFile;
  if (file) {
    const apply = async (retryMs: number) => {
      try {
        const peers = readDeclaredFile(file, clusterName, process.env, { fleetKey: false });
        const outcomes = await applyDeclared(deps, CONFIGURATION, peers, false);
        const pending = outcomes.filter((o) => o.outcome === 'pending' || o.outcome === 'failed');
        for (const o of pending)
          ctx.logger.info({ peer: o.name, reason: o.reason }, 'declared federation peer pending');
        if (pending.length > 0) later(retryMs, () => void apply(Math.min(retryMs * 2, MAX_RETRY_MS)));
      } catch (error) {
        ctx.logger.error({ err: (error as Error).message, file }, 'declared federation set not applied');
      }
    };
    later(0, () => void apply(FIRST_RETRY_MS));
  }
  return {
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
