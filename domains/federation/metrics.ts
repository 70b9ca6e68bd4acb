/**
 * Federation state per peer record, read from the record cache at each scrape: one series per record with the value
 * 1 under its current state. `peer` is the record id and `remote_cluster` its name — both bounded by the records
 * that exist; deleted records are left out. Beside it: names two PAIRED records share (a selector by such a name is
 * ambiguous), the peer pools this process holds open, the outcomes of reconciliation pings, and the signature
 * checks unauthenticated pair calls cost.
 */
import type { Counter } from 'prom-client';
import type { MetricsRegistry } from '../../gateway/observability/metrics.ts';
import type { PeerAgents } from './context.ts';
import type { RecordCache } from './record-cache.ts';

export function observeFederations(metrics: MetricsRegistry, cache: RecordCache, agents: PeerAgents): Counter<string> {
  metrics.gauge({
    name: 'federation_peer_state',
    help: 'Each federation record, 1 under its current state (WAITING, PAIRING, PAIRED, DISCONNECTED).',
    labels: ['peer', 'remote_cluster', 'state'],
    across: 'first',
    collect(gauge) {
      gauge.reset();
      for (const { row } of cache.all()) gauge.labels(row.id, row.remoteClusterName, row.status).set(1);
    },
  });
  metrics.gauge({
    name: 'federation_name_collisions',
    help: 'PAIRED records whose remote_cluster_name another PAIRED record also carries, by that name.',
    labels: ['remote_cluster'],
    across: 'first',
    collect(gauge) {
      gauge.reset();
      for (const name of cache.collisions()) gauge.labels(name).set(cache.collidingWith(name).length);
    },
  });
  metrics.gauge({
    name: 'federation_peer_pools',
    help: 'Connection pools to federation peers this process holds open (one per PAIRED record in use).',
    labels: [],
    collect: (gauge) => gauge.set(agents.size),
  });
  return metrics.counter({
    name: 'federation_reconcile_total',
    help: 'Reconciliation pings of PAIRED records, by outcome (ok, peer_pairing_ended, or the failing reason).',
    labels: ['outcome'],
  });
}

/** PSK signature checks answering /remote/pair, an unauthenticated call: at most one per call that names a key id. */
export function pairCheckCounter(metrics: MetricsRegistry): Counter<string> {
  return metrics.counter({
    name: 'federation_pair_signature_checks_total',
    help: 'PSK signature checks made answering /remote/pair (one per call naming a key id, whatever WAITING records).',
    labels: [],
  });
}
