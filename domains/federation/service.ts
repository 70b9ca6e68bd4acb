/**
 * Federation records: create, list, get, update, disconnect, delete and
 * ping. Transport-free; takes a Principal. Pairing itself is pairing.ts,
 * the answering side of peer calls peer-protocol.ts.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { ValidationProblem } from '../../gateway/errors/api-error.ts';
import { validate, validationError } from '../../gateway/http/body.ts';
import { SIGNATURE_MAX_AGE_SECONDS } from '../../gateway/mesh/canonical.ts';
import type { Principal } from '../../gateway/principal.ts';
import { type FederationContext, pskOf, requireRecord } from './context.ts';
import { FederationErrors } from './errors.ts';
import { expectAccepted, expectPeerIdentity } from './pairing.ts';
import { callPeer } from './peer-client.ts';
import { pskKeyId } from './psk-key-id.ts';
import { pingPeer } from './reconcile.ts';
import { type CreateBody, updatableFields } from './requests.ts';
import type { RemoteIp } from './schema.ts';
import type { FederationRow, FederationStatus } from './store.ts';
import { type endedAnswer, type listedAnswer, type pingAnswer, recordView } from './wire.ts';

const UPDATABLE = new Set(['brokering_enabled', 'shared_ca_pem', 'require_peer_jwt', 'shared_jwks_url']);
/** Fields a PUT must refuse to change. */
const IMMUTABLE = new Set([
  'preshared_key',
  'id',
  'role',
  'remote_cluster_name',
  'remote_ips',
  'callback_hostname',
  'local_cluster_id',
  'remote_cluster_id',
  'status',
  'status_reason',
  'declared_as',
  'name_collision',
  'last_activity',
  'last_ping',
  'created_at',
  'created_by',
  'updated_at',
  'shared_issuer_url',
  'identity_mode',
  'trust_posture',
  'grandfathered',
  'peer_kc_issuer_url',
  'peer_kc_jwks_url',
  'peer_broker_client_id',
  'peer_broker_client_secret_urn',
  'local_kc_issuer_url',
  'local_kc_jwks_url',
  'local_broker_client_id',
  'local_broker_client_secret',
  'peer_ca_fingerprint',
]);
const LOCAL_KC = [
  'local_kc_issuer_url',
  'local_kc_jwks_url',
  'local_broker_client_id',
  'local_broker_client_secret',
] as const;

export class FederationService {
  constructor(private readonly ctx: FederationContext) {}

  /**
   * `declaredAs`: the peer name of the declared set that creates it (declared.ts), else null. A declared peer that
   * already has a live record is refused by the database, whoever made it meanwhile: 409 federation_declared_exists.
   */
  create(principal: Principal, body: CreateBody, declaredAs: string | null = null) {
    const identity = this.identityOf(body);
    const problems = createProblems(body);
    if (problems.length > 0) throw validationError(problems);
    const at = this.ctx.now().toISOString();
    const id = randomUUID();
    const kc = body.local_kc_issuer_url
      ? {
          issuer_url: body.local_kc_issuer_url,
          jwks_url: body.local_kc_jwks_url as string,
          client_id: body.local_broker_client_id as string,
          client_secret_urn: body.local_broker_client_secret as string,
        }
      : null;
    const row: FederationRow = {
      id,
      role: body.role,
      remoteClusterName: body.remote_cluster_name,
      remoteIps: normalizeIps(body.remote_ips ?? []),
      callbackHostname: body.callback_hostname ?? null,
      localClusterId: this.ctx.local.id,
      remoteClusterId: null,
      remoteFederationId: null,
      status: body.role === 'receiver' ? 'WAITING' : 'PAIRING',
      statusReason: null,
      declaredAs,
      lastActivity: null,
      lastPing: null,
      createdAt: at,
      createdBy: principal.username,
      updatedAt: at,
      pskEnc: this.ctx.vault.seal(id, body.preshared_key),
      // Only a WAITING receiver is looked up by key id (peer-protocol.ts); the store clears it when it leaves WAITING.
      pskKeyId: body.role === 'receiver' ? this.ctx.vault.keyIdLookup(pskKeyId(body.preshared_key)) : null,
      remoteCaPem: null,
      peerKcIssuerUrl: null,
      peerKcJwksUrl: null,
      peerBrokerClientId: null,
      peerBrokerClientSecretUrn: null,
      localKc: kc,
      brokeringEnabled: body.brokering_enabled ?? true,
      sharedIssuerUrl: body.shared_issuer_url ?? null,
      // Accepted with no effect (spec): mesh ingress derives the JWKS from the issuer's discovery document.
      sharedJwksUrl: null,
      sharedCaPem: body.shared_ca_pem ?? null,
      ...identity,
      grandfathered: false,
      meshFeatures: [],
    };
    this.ctx.records.insert(row);
    this.ctx.authz.write([
      {
        subject: { namespace: 'user', id: principal.userId },
        relation: 'operator',
        object: { namespace: 'federation', id },
      },
    ]);
    return recordView(row);
  }

  /**
   * A shared issuer selects shared_idp; otherwise peer_kc, gated by cluster policy
   * (untrusted federation is off by default).
   */
  private identityOf(body: CreateBody): Pick<FederationRow, 'identityMode' | 'trustPosture' | 'requirePeerJwt'> {
    if (body.identity_mode && body.identity_mode !== 'shared_idp' && body.identity_mode !== 'peer_kc') {
      throw FederationErrors.make.identity_mode_unsupported({ identity_mode: body.identity_mode });
    }
    const mode = body.shared_issuer_url ? 'shared_idp' : 'peer_kc';
    if (body.identity_mode && body.identity_mode !== mode) {
      throw validationError([
        {
          loc: ['body', 'identity_mode'],
          msg: `${body.identity_mode} needs shared_issuer_url ${mode === 'peer_kc' ? 'set' : 'absent'}`,
          type: 'value_error',
        },
      ]);
    }
    if (mode === 'shared_idp')
      return {
        identityMode: mode,
        trustPosture: 'receiver_controlled_shared',
        requirePeerJwt: body.require_peer_jwt ?? null,
      };
    if (!this.ctx.policy.allowUntrustedFederation) throw FederationErrors.make.untrusted_federation_disabled();
    return { identityMode: mode, trustPosture: 'source_trusted', requirePeerJwt: body.require_peer_jwt ?? true };
  }

  list(filter: { status?: FederationStatus | undefined; q?: string | undefined; skip: number; limit: number }) {
    return this.ctx.records.list(filter).map((row) => this.listed(row));
  }

  get(id: string) {
    return this.listed(requireRecord(this.ctx, id));
  }

  private listed(row: FederationRow): z.output<typeof listedAnswer> {
    const colliding = row.status === 'PAIRED' ? this.ctx.cache.collidingWith(row.remoteClusterName) : [];
    return { ...recordView(row), name_collision: colliding.some((r) => r.row.id === row.id) };
  }

  /** Only brokering_enabled, shared_ca_pem and require_peer_jwt change; any other change refuses the whole PUT. */
  update(id: string, body: Record<string, unknown>) {
    const row = requireRecord(this.ctx, id);
    const current = recordView(row) as Record<string, unknown>;
    const refused = Object.keys(body).filter(
      (k) => IMMUTABLE.has(k) && (k === 'preshared_key' || JSON.stringify(body[k]) !== JSON.stringify(current[k])),
    );
    if (refused.length > 0) throw FederationErrors.make.federation_field_immutable({ fields: refused.sort() });
    if (row.status === 'DELETED')
      throw FederationErrors.make.federation_state_conflict({ status: row.status, role: row.role });
    const changes = validate(
      updatableFields,
      Object.fromEntries(Object.entries(body).filter(([k]) => UPDATABLE.has(k))),
      'body',
    );
    const updated = this.ctx.records.update(id, {
      ...(changes.brokering_enabled !== undefined ? { brokeringEnabled: changes.brokering_enabled } : {}),
      ...(changes.shared_ca_pem !== undefined ? { sharedCaPem: changes.shared_ca_pem } : {}),
      ...(changes.require_peer_jwt !== undefined ? { requirePeerJwt: changes.require_peer_jwt } : {}),
      updatedAt: this.ctx.now().toISOString(),
    });
    return recordView(updated);
  }

  /** Default: the peer acknowledges first, or nothing changes (502). force=true: local only. */
  async disconnect(id: string, force: boolean): Promise<z.output<typeof endedAnswer>> {
    const row = requireRecord(this.ctx, id);
    if (row.status === 'DELETED')
      throw FederationErrors.make.federation_state_conflict({ status: row.status, role: row.role });
    let acknowledged = false;
    if (row.status === 'PAIRED' && !force) {
      try {
        await this.notifyPeer(row, 'operator_disconnect');
        acknowledged = true;
      } catch (error) {
        const cause = (error as { reason?: string }).reason ?? 'peer_unreachable';
        throw FederationErrors.make.peer_disconnect_failed(
          { cause, remediation: 'retry when the peer is reachable, or use ?force=true' },
          error,
        );
      }
    }
    const at = this.ctx.now().toISOString();
    this.ctx.records.update(id, {
      status: 'DISCONNECTED',
      statusReason: force && row.status === 'PAIRED' ? 'operator_forced' : 'operator_disconnect',
      updatedAt: at,
      lastActivity: at,
    });
    return {
      federation_id: id,
      status: 'DISCONNECTED',
      peer_acknowledged: acknowledged,
      message: 'Federation disconnected',
    };
  }

  /** Soft delete: best-effort peer notice, PSK destroyed, ReBAC grants on the record removed. */
  async delete(id: string): Promise<z.output<typeof endedAnswer>> {
    const row = requireRecord(this.ctx, id);
    if (row.status === 'DELETED')
      return { federation_id: id, status: 'DELETED', peer_acknowledged: false, message: 'Federation deleted' };
    let acknowledged = false;
    if (row.status === 'PAIRED') {
      acknowledged = await this.notifyPeer(row, 'deleted').then(
        () => true,
        (error: unknown) => {
          this.ctx.logger.warn(
            { federation_id: id, reason: (error as { reason?: string }).reason },
            'peer teardown on delete failed (best effort)',
          );
          return false;
        },
      );
    }
    const at = this.ctx.now().toISOString();
    this.ctx.records.update(id, {
      status: 'DELETED',
      statusReason: 'deleted',
      pskEnc: null,
      pskKeyId: null,
      updatedAt: at,
      lastActivity: at,
    });
    this.ctx.authz.deleteObject({ namespace: 'federation', id });
    return { federation_id: id, status: 'DELETED', peer_acknowledged: acknowledged, message: 'Federation deleted' };
  }

  /** The signed peer path end to end; transport failures are 502/504 with the layer reason. */
  async ping(id: string): Promise<z.output<typeof pingAnswer>> {
    const row = requireRecord(this.ctx, id);
    const at = await pingPeer(this.ctx, row);
    return { federation_id: id, reachable: true, remote_cluster_id: row.remoteClusterId, last_ping: at };
  }

  private async notifyPeer(row: FederationRow, reason: string): Promise<void> {
    const agent = this.ctx.agents.for(row);
    const key = pskOf(this.ctx, row);
    if (!agent || !key) throw FederationErrors.make.federation_not_paired({ status: row.status });
    const body = { federation_id: row.id, cluster_id: this.ctx.local.id, reason };
    const answer = await callPeer(
      agent,
      '/api/cluster/remote/disconnect',
      body,
      key,
      this.ctx.local.id,
      this.ctx.now(),
    );
    expectAccepted(this.ctx, answer, SIGNATURE_MAX_AGE_SECONDS);
    expectPeerIdentity(this.ctx, row, answer);
  }
}

function createProblems(body: CreateBody): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  if (body.role === 'initiator' && !body.remote_ips?.length) {
    problems.push({
      loc: ['body', 'remote_ips'],
      msg: 'required for role=initiator: the receiver address to pair with',
      type: 'missing',
    });
  }
  const given = LOCAL_KC.filter((k) => body[k]);
  if (given.length > 0 && given.length < LOCAL_KC.length) {
    for (const k of LOCAL_KC.filter((f) => !body[f]))
      problems.push({ loc: ['body', k], msg: `required together with ${given.join(', ')}`, type: 'missing' });
  }
  if (body.local_broker_client_secret && !body.local_broker_client_secret.startsWith('urn:')) {
    problems.push({
      loc: ['body', 'local_broker_client_secret'],
      msg: 'must be a secret URN (urn:li:dataHubSecret:...), never a raw value',
      type: 'value_error',
    });
  }
  return problems;
}

/** Exactly one primary: the first flagged, else the first entry. */
function normalizeIps(ips: readonly RemoteIp[]): RemoteIp[] {
  const primary = Math.max(
    0,
    ips.findIndex((r) => r.primary),
  );
  return ips.map((r, i) => ({ ip: r.ip, hostname: r.hostname ?? null, primary: i === primary }));
}
