/**
 * Reasons shared by both kinds of gate binding and by gate discovery — the cluster execution gate
 * (jobs) and per-dataset record gates (retrieval) — so
 * one reason means one thing however it is reached.
 */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const GateErrors = defineErrors('gates', {
  not_configured: {
    status: 404,
    doc:
      'No gate is bound: the cluster execution gate (GET/DELETE ' +
      "`/api/cluster/execution-gate`) or a dataset's record gate (GET/DELETE " +
      '`…/datasets/{urn}/gate`).',
  },
  wrong_kind: {
    status: 400,
    doc:
      'The gate class is of the other kind: an execution gate bound to a ' +
      'dataset, or a record gate bound as the execution gate; `expected` ' +
      'names the kind wanted.',
  },
  classpath_unimportable: {
    status: 404,
    doc:
      'The gate class path names a gate module (`platform.gates.`, ' +
      '`kamiwaza.services.authz.gates.`, `acme_gates.`) but no gate this ' +
      'gateway ships.',
  },
  classpath_not_allowed: {
    status: 403,
    doc: 'The gate class path is not one this gateway allows (its built-in gates and their upstream aliases).',
  },
  gate_config_invalid: {
    status: 400,
    doc: "The gate `config` does not match the gate's config schema; `problems` lists why.",
  },
});
