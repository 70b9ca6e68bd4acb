/**
 * Declared federation: the desired set of peers (declared-file.ts) reconciled against the records this cluster
 * holds. Each declared peer owns at most one live record (declared_as = its name); a record made by hand is never
 * touched. Applying the same set twice changes nothing.
 *
 * Per peer: no live record → create it (an initiator is then paired); a live record whose definition differs (role,
 * address, callback, PSK, identity) → disconnect it (the peer told first, else locally: it ends at the peer's next
 * reconciliation ping) and create a new one; an initiator still in PAIRING → pair (a receiver that has not applied
 * its side yet leaves it pending: apply again); then the allowlist is brought to the declared entries (added,
 * recipe replaced, unlisted ones revoked). Declared records whose peer is no longer listed are disconnected.
 *
 * A dry run never compares a PSK with the stored one: its plan would otherwise answer "is this the pairing's PSK?"
 * to whoever runs it, with nothing changed and nobody told — a guessing oracle for a secret the API never returns.
 * The plan is made from the other fields, and says of the PSK only that it is set (not compared) or will be set.
 * Applying does compare, and acts on it: a PSK that differs replaces the pairing, which both sides see.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Principal } from '../../gateway/principal.ts';
import type { AllowlistService } from './allowlist.ts';
import type { FederationContext } from './context.ts';
import type { DeclaredPeer } from './declared-file.ts';
import { pair } from './pairing.ts';
import type { FederationService } from './service.ts';
import type { FederationRow } from './store.ts';
import { primaryRoute } from './wire.ts';

export type PeerAction = 'create' | 'replace' | 'pair' | 'keep' | 'disconnect';

export interface PeerOutcome {
  name: string;
  action: PeerAction;
  /** What happened (`planned` on a dry run): created, paired, waiting, pending, unchanged, disconnected, failed. */
  outcome: string;
  federation_id: string | null;
  status: string | null;
  /** Allowlist entries added, changed and revoked (planned on a dry run). */
  allowlist: { added: number; changed: number; revoked: number };
  /**
   * Why a step did not complete (a reason from ERRORS.md); with outcome `unchanged`, `paired_by_another_apply`: an
   * apply running at the same time paired the record, so this one had nothing left to do.
   */
  reason?: string;
  /** Dry runs: the PSK will be set (a new record), or a record keeps one that was not compared with the file's. */
  psk?: 'will_be_set' | 'set_not_compared';
}

/** The operator of a declared set: a native administrator by virtue of holding the file and the admin token. */
export interface DeclaredDeps {
  ctx: FederationContext;
  service: FederationService;
  allowlist: AllowlistService;
}

const LIVE = new Set(['WAITING', 'PAIRING', 'PAIRED']);

function sameSecret(ctx: FederationContext, row: FederationRow, psk: string): boolean {
  if (!row.pskEnc) return false;
  const stored = Buffer.from(ctx.vault.open(row.id, row.pskEnc));
  const given = Buffer.from(psk);
  return stored.length === given.length && timingSafeEqual(stored, given);
}

/** The fields a declared peer sets at creation but the PSK: any difference needs a new record. */
function sameShape(row: FederationRow, peer: DeclaredPeer): boolean {
  const route = primaryRoute(row);
  const mode = peer.shared_issuer_url ? 'shared_idp' : 'peer_kc';
  return (
    row.role === peer.role &&
    (peer.role === 'receiver' ||
      (route?.ip === peer.address && (route?.hostname ?? null) === (peer.hostname ?? null))) &&
    (row.callbackHostname ?? null) === (peer.callback ?? null) &&
    (row.sharedIssuerUrl ?? null) === (peer.shared_issuer_url ?? null) &&
    row.identityMode === (peer.identity_mode ?? mode)
  );
}

function allowlistPlan(ctx: FederationContext, federationId: string | null, peer: DeclaredPeer) {
  const current = new Map(federationId ? ctx.allowlist.list(federationId).map((e) => [e.externalId, e]) : []);
  const wanted = new Set(peer.allowlist.map((e) => e.external_id));
  const add = peer.allowlist.filter((e) => !current.has(e.external_id));
  const change = peer.allowlist.filter((e) => {
    const have = current.get(e.external_id);
    return (
      have && (have.disabledAt !== null || JSON.stringify(have.initialTuples) !== JSON.stringify(e.initial_tuples))
    );
  });
  const revoke = [...current.values()].filter((e) => !wanted.has(e.externalId) && e.disabledAt === null);
  return { add, change, revoke };
}

export async function applyDeclared(
  deps: DeclaredDeps,
  principal: Principal,
  peers: readonly DeclaredPeer[],
  dryRun: boolean,
): Promise<PeerOutcome[]> {
  const { ctx } = deps;
  const declared = ctx.records.declared().filter((r) => LIVE.has(r.status));
  const byName = new Map(declared.map((r) => [r.declaredAs as string, r]));
  const outcomes: PeerOutcome[] = [];
  for (const peer of peers) outcomes.push(await applyPeer(deps, principal, peer, byName.get(peer.name), dryRun));
  const listed = new Set(peers.map((p) => p.name));
  for (const row of declared.filter((r) => !listed.has(r.declaredAs as string))) {
    const outcome = dryRun ? 'planned' : await endRecord(deps, row);
    outcomes.push({
      name: row.declaredAs as string,
      action: 'disconnect',
      outcome,
      federation_id: row.id,
      status: dryRun ? row.status : 'DISCONNECTED',
      allowlist: { added: 0, changed: 0, revoked: 0 },
    });
  }
  return outcomes;
}

function actionFor(existing: FederationRow | undefined, same: boolean): PeerAction {
  if (!existing) return 'create';
  if (!same) return 'replace';
  return existing.status === 'PAIRING' ? 'pair' : 'keep';
}

/** What a peer's plan says: from the fields but the PSK on a dry run, from the PSK too when applying (header). */
function planPeer(ctx: FederationContext, peer: DeclaredPeer, existing: FederationRow | undefined, dryRun: boolean) {
  const shaped = existing !== undefined && sameShape(existing, peer);
  // A record keeps its PSK (a PSK cannot change in place); only a real apply compares it.
  const kept = shaped && (dryRun || sameSecret(ctx, existing, peer.preshared_key));
  const plan = allowlistPlan(ctx, kept ? (existing?.id ?? null) : null, peer);
  return {
    kept,
    plan,
    result: {
      name: peer.name,
      action: actionFor(existing, kept),
      allowlist: { added: plan.add.length, changed: plan.change.length, revoked: plan.revoke.length },
    },
  };
}

async function applyPeer(
  deps: DeclaredDeps,
  principal: Principal,
  peer: DeclaredPeer,
  existing: FederationRow | undefined,
  dryRun: boolean,
): Promise<PeerOutcome> {
  const { ctx } = deps;
  const { kept, result } = planPeer(ctx, peer, existing, dryRun);
  if (dryRun) {
    const psk = kept ? 'set_not_compared' : 'will_be_set';
    return {
      ...result,
      psk,
      outcome: 'planned',
      federation_id: existing?.id ?? null,
      status: existing?.status ?? null,
    };
  }
  let row: FederationRow | undefined;
  try {
    if (existing && !kept) await endRecord(deps, existing);
    row = existing && kept ? existing : createRecord(deps, principal, peer);
    const paired = await pairIfDue(deps, principal, row);
    row = paired.row;
    await syncAllowlist(deps, row.id, allowlistPlan(ctx, row.id, peer));
    if (paired.byAnother)
      return { ...result, outcome: 'unchanged', reason: PAIRED_ELSEWHERE, federation_id: row.id, status: row.status };
    const outcome = result.action === 'keep' ? 'unchanged' : row.status.toLowerCase();
    return { ...result, outcome, federation_id: row.id, status: row.status };
  } catch (error) {
    return { ...result, ...stopped(ctx, row ?? liveRecordOf(ctx, peer.name), error) };
  }
}

/** The live record a declared peer has now: the one another apply made when ours was refused for it. */
function liveRecordOf(ctx: FederationContext, name: string): FederationRow | undefined {
  return ctx.records.declared().find((r) => r.declaredAs === name && LIVE.has(r.status));
}

/**
 * A receiver that has not applied its side yet refuses the pair: the record stays PAIRING until the next apply. A
 * record another apply made at the same time is `failed` (federation_declared_exists) and named: apply again.
 */
function stopped(ctx: FederationContext, row: FederationRow | undefined, error: unknown) {
  const current = row ? ctx.records.get(row.id) : undefined;
  const reason = (error as { reason?: string }).reason ?? 'failed';
  return {
    outcome: current?.status === 'PAIRING' && reason !== 'federation_declared_exists' ? 'pending' : 'failed',
    reason,
    federation_id: current?.id ?? null,
    status: current?.status ?? null,
  };
}

const PAIRED_ELSEWHERE = 'paired_by_another_apply';

/** Pair calls of declared records in flight in this process, by record id: a second apply waits for the first's. */
const pairsInFlight = new Map<string, Promise<unknown>>();

/**
 * Pairs an initiator still in PAIRING. Two applies at once would each send a pair call for it, and the receiver,
 * whose record the first made PAIRED, would refuse the second (invalid_signature: no WAITING record has that PSK any
 * more). So an apply joins a pair call already in flight here, and one whose call fails while the record is PAIRED
 * by then (an apply in another process, or one that finished in between) reports it as paired by that other apply.
 */
async function pairIfDue(
  deps: DeclaredDeps,
  principal: Principal,
  row: FederationRow,
): Promise<{ row: FederationRow; byAnother: boolean }> {
  if (row.role !== 'initiator' || row.status !== 'PAIRING') return { row, byAnother: false };
  let running = pairsInFlight.get(row.id);
  const joined = running !== undefined;
  if (!running) {
    const started = pair(deps.ctx, principal, row.id).finally(() => pairsInFlight.delete(row.id));
    pairsInFlight.set(row.id, started);
    running = started;
  }
  try {
    await running;
  } catch (error) {
    const current = deps.ctx.records.get(row.id);
    if (current?.status === 'PAIRED') return { row: current, byAnother: true };
    throw error;
  }
  return { row: deps.ctx.records.get(row.id) as FederationRow, byAnother: joined };
}

function createRecord(deps: DeclaredDeps, principal: Principal, peer: DeclaredPeer): FederationRow {
  const view = deps.service.create(
    principal,
    {
      remote_cluster_name: peer.name,
      role: peer.role,
      preshared_key: peer.preshared_key,
      remote_ips: peer.address ? [{ ip: peer.address, hostname: peer.hostname ?? null, primary: true }] : undefined,
      callback_hostname: peer.callback ?? null,
      shared_issuer_url: peer.shared_issuer_url ?? null,
      identity_mode: peer.identity_mode ?? undefined,
    },
    peer.name,
  );
  return deps.ctx.records.get(view.id) as FederationRow;
}

/** Disconnects a declared record: the peer told first; when it cannot be, locally (it reconciles at next contact). */
async function endRecord(deps: DeclaredDeps, row: FederationRow): Promise<string> {
  try {
    await deps.service.disconnect(row.id, false);
    return 'disconnected';
  } catch {
    await deps.service.disconnect(row.id, true);
    return 'disconnected_locally';
  }
}

async function syncAllowlist(deps: DeclaredDeps, federationId: string, plan: ReturnType<typeof allowlistPlan>) {
  for (const entry of plan.add) deps.allowlist.add(federationId, entry);
  for (const entry of plan.change) deps.allowlist.restore(federationId, entry.external_id, entry.initial_tuples);
  for (const entry of plan.revoke) await deps.allowlist.revoke(federationId, entry.externalId, false);
}
