/** Catalog test helpers: hostile names, the three URN addressing forms, grants, mesh principals. */
import { AUTHZ } from '../../domains/authz/index.ts';
import { DATASETS, SECRETS } from '../../domains/catalog/index.ts';
import { boundSecretReference } from '../../domains/catalog/urn.ts';
import type { Principal } from '../../gateway/principal.ts';
import type { TestGateway } from './gateway.ts';

/** Names clients really send, and hostile ones. */
export const HOSTILE_NAMES = [
  'plain',
  '/srv/docs',
  'my-bucket/deep/key.parquet',
  'a,b,c',
  'f(x),g(y)',
  'unbalanced)(',
  '((((',
  'literal%2Fslash',
  'percent%25and%',
  'plus+sign and space',
  'ünïcødé/数据/🚀',
  'ends/with/schema',
  'x/datasets/y',
  '?query#frag&amp=1',
  `very-long/${'n'.repeat(3000)}`,
];

/** True when the URN may travel unencoded in a path (no `%`, `?`, `#`, `//`, non-ASCII or spaces). */
export function rawSafe(urn: string): boolean {
  return /^[\x21-\x7e]*$/.test(urn) && !/[%?#]/.test(urn) && !urn.includes('//');
}

/**
 * The item paths of one dataset URN in every addressing form it can take:
 * v2 percent-encoded, v2 raw (when raw-safe), by-urn, and
 * the legacy single segment.
 */
export function datasetPaths(urn: string): { form: string; path: string }[] {
  const enc = encodeURIComponent(urn);
  return [
    { form: 'v2-encoded', path: `/api/catalog/datasets/v2/${enc}` },
    ...(rawSafe(urn) ? [{ form: 'v2-raw', path: `/api/catalog/datasets/v2/${urn}` }] : []),
    { form: 'by-urn', path: `/api/catalog/datasets/by-urn?urn=${enc}` },
    { form: 'legacy', path: `/api/catalog/datasets/${enc}` },
  ];
}

export function schemaPaths(urn: string): { form: string; path: string }[] {
  const enc = encodeURIComponent(urn);
  return [
    { form: 'v2-encoded', path: `/api/catalog/datasets/v2/${enc}/schema` },
    ...(rawSafe(urn) ? [{ form: 'v2-raw', path: `/api/catalog/datasets/v2/${urn}/schema` }] : []),
    { form: 'by-urn', path: `/api/catalog/datasets/by-urn/schema?urn=${enc}` },
  ];
}

export function grant(gw: TestGateway, userId: string, relation: string, urn: string): void {
  gw.gateway.deps.services
    .get(AUTHZ)
    .write([{ subject: { namespace: 'user', id: userId }, relation, object: { namespace: 'dataset', id: urn } }]);
}

export function datasetService(gw: TestGateway) {
  return gw.gateway.deps.services.get(DATASETS);
}

export function secretsAccess(gw: TestGateway) {
  return gw.gateway.deps.services.get(SECRETS);
}

/** The id of the secret a URN names now, as stored (never shown by the API). */
export function secretId(gw: TestGateway, urn: string): string | undefined {
  const lookup = gw.gateway.deps.sql.prepare('SELECT id FROM catalog_secrets WHERE urn = ?');
  return (lookup.get(urn) as { id: string } | undefined)?.id;
}

/** The value of the secret a URN names now, through SECRETS.reveal, which takes only a reference bound to an id. */
export function revealCurrent(gw: TestGateway, urn: string): string {
  const id = secretId(gw, urn);
  if (!id) throw new Error(`no secret ${urn}`);
  return secretsAccess(gw).reveal(boundSecretReference(urn, id));
}

/** A receiver-local brokered user as the (future) mesh proxy will present it; roles as the source asserted them. */
export function meshPrincipal(userId: string, roles: string[] = []): Principal {
  return {
    userId,
    username: `remote-${userId.slice(0, 8)}`,
    email: null,
    roles,
    attributes: {},
    tenantId: '__default__',
    source: 'mesh',
    authMethod: 'mesh',
    externalId: `alice@${userId}`,
    sourceClusterId: '00000000-0000-4000-8000-000000000001',
    sourceClusterName: 'peer',
  };
}

export async function createDataset(gw: TestGateway, token: string, body: Record<string, unknown>): Promise<string> {
  const res = await gw.request('POST', '/api/catalog/datasets/', { token, json: body });
  if (res.status !== 201) throw new Error(`dataset create: ${res.status} ${res.text}`);
  return res.json as string;
}
