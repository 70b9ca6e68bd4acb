/**
 * Federation cards: one per record, with the facts an operator pairs by
 * (status, peer, last ping, identity mode, allowlisted users) and the
 * actions the API offers. Diagnose shows each layer of the connection as a
 * checklist, with the reason and remedy of the first that failed. Below the
 * cards, the form that creates a record (federation-form.ts).
 */
import { useState } from 'preact/hooks';
import { api } from './api.ts';
import { CreateFederationForm } from './federation-form.ts';
import { Badge, ErrorNote, html, useAction, useApi, when } from './ui.ts';

const BASE = '/cluster/federations';
/** Pairing moves on the peer too: cards re-read the records this often. */
const REFRESH_MS = 2000;

interface Layer {
  layer: string;
  ok: boolean;
  reason: string | null;
  detail: unknown;
  remedy: string | null;
}

function Checklist({
  report,
}: {
  report: { ok: boolean; layers: Layer[]; reason: string | null; remedy: string | null };
}) {
  return html`<div class="diagnose">
    <p><strong>${report.ok ? 'All layers pass' : `Failing: ${report.reason}`}</strong></p>
    <ul class="checklist" aria-label="Connection layers">
      ${report.layers.map(
        (l) => html`<li class=${l.ok ? 'pass' : l.reason === 'skipped' ? 'skip' : 'fail'}>
          <span aria-hidden="true">${l.ok ? '✔' : l.reason === 'skipped' ? '–' : '✘'}</span>
          <span>${l.layer}</span> <span class="muted">${l.ok ? 'ok' : l.reason}</span>
          ${l.remedy ? html`<div class="remedy">${l.remedy}</div>` : null}
        </li>`,
      )}
    </ul>
    ${report.remedy && !report.layers.some((l) => l.remedy) ? html`<p class="remedy">${report.remedy}</p>` : null}
  </div>`;
}

function FederationCard({ record, onChange }: { record: any; onChange: () => void }) {
  const allowlist = useApi<any[]>(`${BASE}/${record.id}/users`);
  const [report, setReport] = useState<any>(null);
  const action = useAction();
  const route = record.remote_ips?.find((r: any) => r.primary) ?? record.remote_ips?.[0];
  const act = (path: string) =>
    action.run(async () => {
      await api('POST', `${BASE}/${record.id}/${path}`);
      onChange();
    });
  const diagnose = () => action.run(async () => setReport(await api('POST', `${BASE}/${record.id}/diagnose`)));
  const name = record.remote_cluster_name;
  return html`<article class="card" aria-labelledby=${`fed-${record.id}`}>
    <header>
      <h3 id=${`fed-${record.id}`}>${name}</h3>
      <${Badge} value=${record.status} />
    </header>
    <dl>
      <dt>Role</dt><dd>${record.role}</dd>
      <dt>Peer</dt><dd>${route ? `${route.hostname} (${route.ip})` : 'not known yet'}</dd>
      <dt>Last ping</dt><dd>${when(record.last_ping)}</dd>
      <dt>Identity mode</dt><dd>${record.identity_mode ?? '—'}</dd>
      <dt>Allowlist</dt><dd>${allowlist.data ? `${allowlist.data.length} user(s)` : '…'}</dd>
    </dl>
    <div class="actions">
      ${
        record.status !== 'PAIRED' && record.role === 'initiator'
          ? html`<button disabled=${action.busy} onClick=${() => act('pair')}>Pair ${name}</button>`
          : null
      }
      ${
        record.status === 'PAIRED'
          ? html`<button disabled=${action.busy} onClick=${() => act('ping')}>Ping ${name}</button>`
          : null
      }
      ${
        record.status === 'PAIRED'
          ? html`<button class="danger" disabled=${action.busy}
            onClick=${() => act('disconnect')}>Disconnect ${name}</button>`
          : null
      }
      <button disabled=${action.busy} onClick=${diagnose}>Diagnose ${name}</button>
    </div>
    <${ErrorNote} error=${action.error} />
    ${report ? html`<${Checklist} report=${report} />` : null}
  </article>`;
}

export function FederationPage() {
  const records = useApi<any[]>(BASE, REFRESH_MS);
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Federation</h2>
    <${ErrorNote} error=${records.error} />
    ${records.data?.length === 0 ? html`<p>No federation records.</p>` : null}
    <div class="cards">
      ${(records.data ?? []).map((r) => html`<${FederationCard} key=${r.id} record=${r} onChange=${records.reload} />`)}
    </div>
    <${CreateFederationForm} onCreated=${records.reload} />
  </section>`;
}
