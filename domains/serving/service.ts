/**
 * The deployments registry:
 * create, list, get and delete models, apps and tools, and resolve one for
 * the runtime proxy. Transport-free: takes a Principal, knows no HTTP.
 * Who sees what is access.ts, for the API and the runtime URLs alike; a
 * mesh caller with no model relation at all is refused the listing (spec
 * "Mesh proxy": remote model listing answers 403 unless the receiver
 * granted a model relation; Authentication 10).
 */
import { randomUUID } from 'node:crypto';
import { GatewayErrors } from '../../gateway/errors/gateway-errors.ts';
import { isNativeAdmin, type Principal } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import type { AuthzService } from '../authz/index.ts';
import { AuthzErrors } from '../authz/index.ts';
import { DeploymentAccess } from './access.ts';
import { ServingErrors } from './errors.ts';
import { type DeploymentInput, type DeploymentPatch, dataPlaneColumns, replicaColumns, replicasOf } from './input.ts';
import { DEFAULT_RETRIES } from './retry.ts';
import { SERIES_MINUTES, seriesView } from './series.ts';
import type { DeploymentRow, DeploymentStore, HealthRow, ReplicaHealthRow, TrafficRow } from './store.ts';
import type { RequestCounts } from './traffic.ts';
import { healthView, sdkModelFields, trafficView } from './wire.ts';

export type DeploymentKind = DeploymentRow['kind'];

/** Deployment kind → the routing service that serves it. */
export const KIND_SERVICE: Readonly<Record<DeploymentKind, string>> = { model: 'models', app: 'apps', tool: 'tools' };

export interface PublicUrls {
  /** Live routing prefixes (service → prefix). */
  prefixes(): Readonly<Record<string, string>>;
  origin(): string;
}

/** The legacy per-deployment listeners (legacy.ts); absent when `serving.legacyPortListeners` is off. */
export interface LegacyPorts {
  /** Starts serving the row's port; throws legacy_port_unavailable when it cannot be bound. */
  open(row: DeploymentRow): Promise<void>;
  close(id: string): Promise<void>;
  /** The legacy URL while its listener is open, else null. */
  url(row: DeploymentRow): string | null;
}

const MAX_CACHED_ROWS = 10_000;

interface Observed {
  health: ReturnType<typeof healthView>;
  traffic: ReturnType<typeof trafficView>;
}

export class DeploymentService {
  /**
   * Rows the proxy looked up: dropped on a write here, or by another process or the CLI (the change feed: `forget`).
   */
  readonly #cache = new Map<string, { row: DeploymentRow | undefined }>();
  readonly #access: DeploymentAccess;

  constructor(
    private readonly store: DeploymentStore,
    private readonly authz: AuthzService,
    private readonly urls: PublicUrls,
    private readonly now: () => Date,
    private readonly ports: LegacyPorts | null = null,
    /** This process's request counts not yet in the table (traffic.ts); null where nothing is proxied. */
    private readonly counts: RequestCounts | null = null,
  ) {
    this.#access = new DeploymentAccess(authz);
  }

  /** `seedOwner` is off for the console, whose operator is no user a tuple could name. */
  async create(principal: Principal, input: DeploymentInput, seedOwner = true) {
    requireAdmin(principal);
    if (this.store.findByName(input.kind, input.name))
      throw ServingErrors.make.deployment_name_taken({ kind: input.kind, name: input.name });
    const legacyPort = input.legacy_port ?? null;
    if (legacyPort !== null) {
      if (!this.ports) throw ServingErrors.make.legacy_ports_disabled({ legacy_port: legacyPort });
      if (this.store.findByLegacyPort(legacyPort))
        throw ServingErrors.make.legacy_port_unavailable({ legacy_port: legacyPort });
    }
    const row: DeploymentRow = {
      id: randomUUID(),
      kind: input.kind,
      name: input.name,
      ...replicaColumns(input),
      affinity: 'none',
      retries: null,
      maxConcurrent: null,
      queueTimeoutMs: null,
      rateLimit: null,
      ...dataPlaneColumns(input),
      stripPrefix: input.strip_prefix,
      websocket: input.websocket,
      timeoutSeconds: input.timeout_seconds ?? null,
      requiresAuth: input.requires_auth,
      forwardAuthorization: input.forward_authorization,
      visibility: input.visibility,
      legacyPort,
      healthPath: input.health_path ?? null,
      createdBy: principal.username,
      createdAt: this.now().toISOString(),
    };
    // Bind before inserting: a port collision leaves no row behind.
    if (legacyPort !== null) await this.ports?.open(row);
    try {
      this.store.insert(row);
    } catch (error) {
      await this.ports?.close(row.id);
      throw error;
    }
    this.#cache.delete(row.id);
    // The creator owns it (as with datasets): owners manage its grants and visibility.
    if (seedOwner) this.authz.grantOwnership(principal, { namespace: row.kind, id: row.id });
    return this.view(row, true);
  }

  list(principal: Principal, kind?: DeploymentKind) {
    if (principal.source === 'mesh') {
      const granted = this.authz.visibleIds(principal, 'model');
      if (granted !== 'all' && granted.size === 0) {
        throw AuthzErrors.make.rebac_denied({ relation: 'viewer', object: 'model:*' });
      }
    }
    const admin = isNativeAdmin(principal);
    const rows = this.store
      .list()
      .filter((row) => (kind === undefined || row.kind === kind) && this.#access.canSee(principal, row));
    const byId = <T extends { deploymentId: string }>(list: T[]) => new Map(list.map((r) => [r.deploymentId, r]));
    const [health, traffic] = rows.length > 0 ? [byId(this.store.health()), byId(this.store.traffic())] : [];
    const replicas = Map.groupBy(rows.length > 0 ? this.store.replicaHealth() : [], (r) => r.deploymentId);
    return rows.map((row) =>
      this.view(
        row,
        admin,
        this.#observed(row, admin, health?.get(row.id), replicas.get(row.id) ?? [], traffic?.get(row.id)),
      ),
    );
  }

  /** Deployments the caller may see; a mesh caller granted none sees none (the list refuses them instead). */
  visibleCount(principal: Principal): number {
    return this.store.list().filter((row) => this.#access.canSee(principal, row)).length;
  }

  /** Health and traffic are read only once the caller may see the deployment, so a hidden one's never leak. */
  get(principal: Principal, id: string) {
    const row = this.#visibleRow(principal, this.store.get(id), id);
    return this.view(row, isNativeAdmin(principal));
  }

  /** The last hour of a deployment's traffic, minute by minute (series.ts), to whoever may see it. */
  traffic(principal: Principal, id: string) {
    this.#visibleRow(principal, this.store.get(id), id);
    const nowMs = this.now().getTime();
    return seriesView(this.store.minutes(id, Math.floor(nowMs / 60_000) - SERIES_MINUTES + 1), nowMs);
  }

  /**
   * Owners and native administrators change who else sees it (anyone else who may see it gets 403); only
   * administrators change where and how it is served (`admin_required`). Nothing is written unless all of it may be.
   */
  update(principal: Principal, id: string, patch: DeploymentPatch) {
    const row = this.#visibleRow(principal, this.store.get(id), id);
    const { visibility, ...dataPlane } = patch;
    if (visibility !== undefined) this.authz.require(principal, 'owner', { namespace: row.kind, id: row.id });
    const changes = dataPlaneColumns(dataPlane);
    if (Object.keys(changes).length > 0) requireAdmin(principal);
    const set: Partial<DeploymentRow> = visibility === undefined ? changes : { ...changes, visibility };
    const updated = Object.keys(set).length > 0 ? (this.store.update(id, set) ?? row) : row;
    this.#cache.delete(id);
    return this.view(updated, isNativeAdmin(principal));
  }

  async remove(principal: Principal, id: string): Promise<void> {
    requireAdmin(principal);
    const row = this.store.get(id);
    if (!row || !this.store.delete(id)) throw ServingErrors.make.deployment_not_found({ id });
    this.#cache.delete(id);
    // Grants on a removed deployment must not carry over to a future object with the same id.
    this.authz.deleteObject({ namespace: row.kind, id });
    await this.ports?.close(id);
  }

  /**
   * The proxy's lookup: the deployment of that kind if the caller (null:
   * anonymous) may see it, else null. Rows are cached until they change, so
   * the hot path costs no query per request; the decision is access.ts's.
   */
  resolveFor(principal: Principal | null, kind: DeploymentKind, id: string): DeploymentRow | null {
    let hit = this.#cache.get(id);
    if (!hit) {
      // Misses are kept too (ids come from request paths): the map is bounded like the verified-token cache.
      if (this.#cache.size >= MAX_CACHED_ROWS) this.#cache.clear();
      hit = { row: this.store.get(id) };
      this.#cache.set(id, hit);
    }
    const row = hit.row;
    return row?.kind === kind && this.#access.canSee(principal, row) ? row : null;
  }

  /** A deployment changed elsewhere; `undefined` forgets every row (the feed's reset). */
  forget(id?: string): void {
    if (id === undefined) this.#cache.clear();
    else this.#cache.delete(id);
  }

  /** What the gateway observed of a deployment: its last probe, and the table's count plus this process's share. */
  #observed(
    row: DeploymentRow,
    admin: boolean,
    health: HealthRow | undefined,
    replicas: readonly ReplicaHealthRow[],
    traffic: TrafficRow | undefined,
  ): Observed {
    return {
      health: healthView(health, replicasOf(row), replicas, admin),
      traffic: trafficView(traffic, this.counts?.unflushed(row.id) ?? 0, this.now),
    };
  }

  #observedOf(row: DeploymentRow, admin: boolean): Observed {
    const id = row.id;
    return this.#observed(
      row,
      admin,
      this.store.health(id)[0],
      this.store.replicaHealth(id),
      this.store.traffic(id)[0],
    );
  }

  /** The row when the caller may see it; otherwise the same 404 as a row that does not exist. */
  #visibleRow(principal: Principal, row: DeploymentRow | undefined, id: string): DeploymentRow {
    if (!row || !this.#access.canSee(principal, row)) throw ServingErrors.make.deployment_not_found({ id });
    return row;
  }

  /** The API record; `upstream` (an internal address) and its `health_path` only for administrators. */
  view(row: DeploymentRow, admin: boolean, observed = this.#observedOf(row, admin)) {
    const prefix = this.urls.prefixes()[KIND_SERVICE[row.kind]];
    const runtimePath = `${prefix}/${row.id}`;
    const url = `${this.urls.origin()}${runtimePath}`;
    return {
      id: row.id,
      kind: row.kind,
      name: row.name,
      ...(admin ? { upstream: row.upstream, upstreams: replicasOf(row), health_path: row.healthPath } : {}),
      affinity: row.affinity,
      retries: row.retries ?? DEFAULT_RETRIES,
      max_concurrent: row.maxConcurrent,
      queue_timeout_ms: row.queueTimeoutMs,
      rate_limit: row.rateLimit,
      strip_prefix: row.stripPrefix,
      websocket: row.websocket,
      timeout_seconds: row.timeoutSeconds,
      requires_auth: row.requiresAuth,
      forward_authorization: row.forwardAuthorization,
      visibility: row.visibility,
      runtime_path: runtimePath,
      url,
      ...(row.kind === 'model' ? { openai_base_url: `${url}/v1` } : {}),
      legacy_port: row.legacyPort,
      legacy_url: this.ports?.url(row) ?? null,
      ...observed,
      created_by: row.createdBy,
      created_at: row.createdAt,
      ...(row.kind === 'model' ? sdkModelFields(row, runtimePath, prefix as string) : {}),
    };
  }
}

function requireAdmin(principal: Principal): void {
  if (!isNativeAdmin(principal)) throw GatewayErrors.make.admin_required();
}

/** The deployments registry, as `meshgate deploy` reaches it through the composition root. */
export const DEPLOYMENTS = createServiceKey<DeploymentService>('deployments');
