/**
 * Retrieval's view of the catalog (the catalog's DATASETS service): dataset
 * lookup under the catalog's ReBAC rules, and the properties write that
 * stores a gate binding as `properties.gate`.
 */

import type { Principal } from '../../gateway/principal.ts';
import type { DatasetService, DatasetView } from '../catalog/index.ts';
import type { DatasetReader, DatasetRecord } from './plan.ts';

export interface DatasetGateStore extends DatasetReader {
  /** Replaces the dataset's properties; owner only (403 rebac_denied otherwise). */
  setProperties(principal: Principal, urn: string, properties: Record<string, unknown>): void;
}

export function catalogDatasets(service: DatasetService): DatasetGateStore {
  return {
    get: (principal, urn) => record(service.get(principal, urn)),
    forUse: (principal, urn) => record(service.forUse(principal, urn)),
    setProperties(principal, urn, properties) {
      service.patch(principal, urn, { properties });
    },
  };
}

function record(view: DatasetView): DatasetRecord {
  return { urn: view.urn, platform: view.platform, name: view.name, properties: view.properties };
}
