/**
 * Federation state per peer record, read at each scrape: one series per
 * record with the value 1 under its current state. `peer` is the record id
 * and `remote_cluster` the name the administrator gave it — both bounded by
 * the records that exist; deleted records are left out.
 */
import type { MetricsRegistry } from '../../gateway/observability/metrics.ts';
import type { FederationStore } from './store.ts';

const LIVE = ['WAITING', 'PAIRING', 'PAIRED', 'DISCONNECTED'] as const;

export function observeFederations(metrics: MetricsRegistry, records: FederationStore): void {
  metrics.gauge({
    name: 'federation_peer_state',
    help: 'Each federation record, 1 under its current state (WAITING, PAIRING, PAIRED, DISCONNECTED).',
    labels: ['peer', 'remote_cluster', 'state'],
    across: 'first',
    collect(gauge) {
      gauge.reset();
      for (const record of records.byStatus(LIVE))
        gauge.labels(record.id, record.remoteClusterName, record.status).set(1);
    },
  });
}
