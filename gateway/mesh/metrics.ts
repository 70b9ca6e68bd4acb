/**
 * Mesh signature outcomes, shared by the egress signer (domains/mesh) and the
 * ingress verifier (verify.ts) through one declaration. `peer` is the
 * federation record id — bounded by the records an administrator created —
 * or `unknown` when a request names none that exists; `outcome` is `ok` or
 * a fixed problem name from the code, never a value the caller sent.
 */
export const MESH_SIGNATURES = {
  name: 'mesh_signatures_total',
  help: 'Mesh envelopes signed (egress) and verified (ingress), by direction, peer record and outcome.',
  labels: ['direction', 'peer', 'outcome'],
} as const;
