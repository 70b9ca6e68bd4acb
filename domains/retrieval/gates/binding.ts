/**
 * Dataset gate binding: `PUT/GET/DELETE
 * /catalog/datasets/{urn}/gate`, stored as the dataset's `properties.gate`.
 * Only built-in attribute gates bind (an execution gate is `wrong_kind`,
 * another class under a gate module `classpath_unimportable`, anything else
 * `classpath_not_allowed`); the config is validated against
 * the gate's schema. Unknown or invisible URN → `dataset_not_found`.
 */
import { z } from 'zod';
import { ApiError } from '../../../gateway/errors/api-error.ts';
import type { Principal } from '../../../gateway/principal.ts';
import { GateErrors, unshippedGate } from '../../gates/index.ts';
import type { DatasetGateStore } from '../catalog-adapter.ts';
import { RetrievalErrors } from '../errors.ts';
import { gateBindingOf } from '../plan.ts';
import { findGate } from './runner.ts';

/** A dataset's record gate binding: the gate's classpath (`type`), its configuration, the shipped gate's name. */
export const gateBindingAnswer = z.object({
  dataset_urn: z.string(),
  type: z.string(),
  config: z.record(z.string(), z.unknown()),
  gate_name: z.string(),
  kind: z.literal('attribute'),
});
export type GateView = z.output<typeof gateBindingAnswer>;

export const gateUnboundAnswer = z.object({ dataset_urn: z.string(), deleted: z.literal(true) });

export class GateBindings {
  constructor(private readonly datasets: DatasetGateStore) {}

  put(principal: Principal, urn: string, type: string, config: unknown): GateView {
    const definition = findGate(type);
    if (!definition) {
      if (/ExecutionGate$/.test(type)) throw GateErrors.make.wrong_kind({ classpath: type, expected: 'attribute' });
      throw unshippedGate(type);
    }
    const parsed = definition.parseConfig(config);
    if ('problems' in parsed) throw GateErrors.make.gate_config_invalid({ problems: parsed.problems });
    const dataset = this.#dataset(principal, urn);
    this.datasets.setProperties(principal, urn, { ...dataset.properties, gate: { type, config: parsed.config } });
    return { dataset_urn: urn, type, config: parsed.config, gate_name: definition.name, kind: 'attribute' };
  }

  get(principal: Principal, urn: string): GateView {
    const binding = gateBindingOf(this.#dataset(principal, urn));
    if (!binding) throw GateErrors.make.not_configured({ dataset_urn: urn });
    return {
      dataset_urn: urn,
      type: binding.type,
      config: binding.config,
      gate_name: findGate(binding.type)?.name ?? binding.type,
      kind: 'attribute',
    };
  }

  delete(principal: Principal, urn: string): z.output<typeof gateUnboundAnswer> {
    const dataset = this.#dataset(principal, urn);
    if (!gateBindingOf(dataset)) throw GateErrors.make.not_configured({ dataset_urn: urn });
    const { gate: _removed, ...rest } = dataset.properties;
    this.datasets.setProperties(principal, urn, rest);
    return { dataset_urn: urn, deleted: true };
  }

  #dataset(principal: Principal, urn: string) {
    try {
      return this.datasets.get(principal, urn);
    } catch (error) {
      // The catalog answers a string "Dataset not found"; the gate API uses the structured reason.
      if (error instanceof ApiError && error.status === 404)
        throw RetrievalErrors.make.dataset_not_found({ dataset_urn: urn });
      throw error;
    }
  }
}
