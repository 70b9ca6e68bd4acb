/** Deployments, jobs (with a live log tail), the catalog and retrieval runs: what the API lets the caller see. */
import { useState } from 'preact/hooks';
import { api } from './api.ts';
import { TrafficCharts } from './charts.ts';
import { DeploymentForm } from './deployment-form.ts';
import { Badge, type Column, ErrorNote, html, Table, useAction, useApi, when } from './ui.ts';

const LIVE_MS = 2000;
const ACTIVE_JOB = new Set(['PENDING', 'RUNNING', 'SUBMITTED']);

/** Why a probe failed: its reason and code. */
function failure(probe: any): string | null {
  return probe.status === 'unhealthy' ? [probe.reason, probe.detail].filter(Boolean).join(' · ') : null;
}

/**
 * The last probe: the verdict, why it failed, and when it was taken; with several replicas, each one's verdict,
 * marked when its probes took it out of rotation.
 */
function Health({ health }: { health: any }) {
  const why = failure(health);
  const replicas: any[] = health.replicas ?? [];
  return html`<${Badge} value=${health.status} />
    ${why ? html` <span class="muted">${why}</span>` : null}
    ${health.checked_at ? html`<div class="muted small">checked ${when(health.checked_at)}</div>` : null}
    ${
      replicas.length > 1
        ? html`<ul class="replicas" aria-label="Replicas">
            ${replicas.map(
              (r) => html`<li>
                replica ${r.index} <${Badge} value=${r.status} />
                ${r.ejected ? html` <strong>ejected</strong>` : null}
                ${failure(r) ? html` <span class="muted">${failure(r)}</span>` : null}
              </li>`,
            )}
          </ul>`
        : null
    }`;
}

/** Where it goes: one upstream, or each replica with its weight (administrators only). */
function Upstreams({ d }: { d: any }) {
  if (!d.upstreams) return html`<span class="muted">administrators only</span>`;
  if (d.upstreams.length === 1) return d.upstream;
  return html`<ol class="replicas" start="0">
    ${d.upstreams.map((r: any) => html`<li>${r.url} <span class="muted">weight ${r.weight}</span></li>`)}
  </ol>`;
}

function Traffic({ d }: { d: any }) {
  const { traffic } = d;
  return html`${traffic.requests.toLocaleString()}
    ${traffic.last_request_at ? html`<div class="muted small">last ${when(traffic.last_request_at)}</div>` : null}
    <${TrafficCharts} id=${d.id} name=${d.name} />`;
}

const DEPLOYMENTS_NOTE =
  "Health is the gateway's own last probe of each replica (a TCP connect, or a GET of its health path); " +
  'a replica that keeps failing is ejected from every gateway process until its probes pass again. ' +
  'Requests are those proxied to it since it was registered, by every gateway process.';

/** An administrator's actions on a row: change it in the form below, or delete it (after a confirmation). */
function DeploymentActions({ d, onEdit, onDeleted }: { d: any; onEdit: (d: any) => void; onDeleted: () => void }) {
  const action = useAction();
  const remove = () =>
    window.confirm(`Delete the deployment ${d.name}? Its runtime URL stops answering.`) &&
    action.run(async () => {
      await api('DELETE', `/serving/deployments/${encodeURIComponent(d.id)}`);
      onDeleted();
    });
  return html`<button type="button" onClick=${() => onEdit(d)} aria-label=${`Change ${d.name}`}>Change</button>
    <button type="button" onClick=${remove} disabled=${action.busy} aria-label=${`Delete ${d.name}`}>Delete</button>
    <${ErrorNote} error=${action.error} />`;
}

export function DeploymentsPage({ admin }: { admin: boolean }) {
  const list = useApi<any[]>('/serving/deployments?kind=all', LIVE_MS);
  const [editing, setEditing] = useState<any | null>(null);
  const done = () => {
    setEditing(null);
    list.reload();
  };
  const actions: Column[] = admin
    ? [['Actions', (d: any) => html`<${DeploymentActions} d=${d} onEdit=${setEditing} onDeleted=${list.reload} />`]]
    : [];
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Deployments</h2>
    <${ErrorNote} error=${list.error} />
    <${Table}
      caption="Deployments"
      rows=${list.data}
      columns=${[
        ['Name', (d: any) => d.name],
        ['Kind', (d: any) => d.kind],
        ['Upstream', (d: any) => html`<${Upstreams} d=${d} />`],
        ['Health', (d: any) => html`<${Health} health=${d.health} />`],
        ['Requests', (d: any) => html`<${Traffic} d=${d} />`],
        ['Runtime URL', (d: any) => html`<a href=${d.url}>${d.runtime_path}</a>`],
        ...actions,
      ]}
    />
    <p class="muted">${DEPLOYMENTS_NOTE}</p>
    ${admin ? html`<${DeploymentForm} key=${editing?.id ?? 'new'} editing=${editing} onDone=${done} />` : null}
  </section>`;
}

function JobLog({ id }: { id: string }) {
  const logs = useApi<any>(`/cluster/jobs/${encodeURIComponent(id)}/logs`, LIVE_MS);
  const text = typeof logs.data === 'string' ? logs.data : (logs.data?.logs ?? '');
  const tail = text.split('\n').slice(-200).join('\n');
  return html`<figure class="log">
    <figcaption>Log of ${id} (last 200 lines, refreshed every ${LIVE_MS / 1000} s)</figcaption>
    <${ErrorNote} error=${logs.error} />
    <pre tabindex="0" aria-live="polite">${tail}</pre>
  </figure>`;
}

export function JobsPage() {
  const jobs = useApi<any[]>('/cluster/jobs/', LIVE_MS);
  const [open, setOpen] = useState<string | null>(null);
  const action = useAction();
  const cancel = (id: string) =>
    action.run(() => api('POST', `/cluster/jobs/${encodeURIComponent(id)}/cancel`).then(jobs.reload));
  const rows = Array.isArray(jobs.data) ? jobs.data : ((jobs.data as any)?.jobs ?? null);
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Jobs</h2>
    <${ErrorNote} error=${jobs.error ?? action.error} />
    <${Table}
      caption="Jobs"
      rows=${rows}
      columns=${[
        ['Job', (j: any) => j.job_id ?? j.id],
        ['State', (j: any) => html`<${Badge} value=${j.status} />`],
        ['Source cluster', (j: any) => j.source_cluster_name ?? j.source_cluster_id ?? 'local'],
        ['Submitted', (j: any) => when(j.submitted_at)],
        [
          'Actions',
          (j: any) => html`<button onClick=${() => setOpen(j.job_id ?? j.id)}>Log of ${j.job_id ?? j.id}</button>
            ${
              ACTIVE_JOB.has(j.status)
                ? html` <button class="danger" disabled=${action.busy}
                  onClick=${() => cancel(j.job_id ?? j.id)}>Cancel</button>`
                : null
            }`,
        ],
      ]}
    />
    ${open ? html`<${JobLog} key=${open} id=${open} />` : null}
  </section>`;
}

export function CatalogPage({ admin }: { admin: boolean }) {
  const datasets = useApi<any[]>('/catalog/datasets/');
  const containers = useApi<any[]>('/catalog/containers/');
  const list = (d: any) => (Array.isArray(d) ? d : (d?.items ?? d?.datasets ?? d?.containers ?? null));
  const secretsNote =
    'Secrets are shown by their metadata only (URN, owner, dates); their values never reach the console.' +
    (admin ? '' : ' Only their owners and administrators list them.');
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Catalog</h2>
    <${ErrorNote} error=${datasets.error ?? containers.error} />
    <${Table}
      caption="Datasets"
      rows=${list(datasets.data)}
      columns=${[
        ['URN', (d: any) => d.urn],
        ['Platform', (d: any) => d.platform ?? '—'],
        ['Gate', (d: any) => (d.gate ? html`<${Badge} value=${d.gate.mode ?? 'bound'} />` : 'none')],
      ]}
    />
    <${Table} caption="Containers" rows=${list(containers.data)}
      columns=${[['URN', (c: any) => c.urn], ['Name', (c: any) => c.name ?? '—']]} />
    <p class="muted">${secretsNote}</p>
  </section>`;
}

export function RetrievalPage() {
  const runs = useApi<any>('/retrieval/jobs', LIVE_MS);
  const rows = Array.isArray(runs.data) ? runs.data : (runs.data?.jobs ?? runs.data?.items ?? null);
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Retrieval runs</h2>
    <${ErrorNote} error=${runs.error} />
    <${Table}
      caption="Retrieval runs"
      rows=${rows}
      columns=${[
        ['Run', (r: any) => r.job_id],
        ['Dataset', (r: any) => r.dataset_urn],
        ['Status', (r: any) => html`<${Badge} value=${r.status} />`],
        ['Rows', (r: any) => r.progress?.rows_processed ?? 0],
        ['Transport', (r: any) => r.transport],
      ]}
    />
  </section>`;
}
