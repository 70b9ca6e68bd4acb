/**
 * Federation cards: one per record, with the facts an operator pairs by
 * (status and why, peer, last ping, identity mode, allowlisted users, whether
 * a declared set manages it, a name another paired record also carries) and
 * the actions the API offers. Diagnose shows each layer of the connection as
 * a checklist, with the reason and remedy of the first that failed. The cards
 * come a page at a time (federation-list.ts), narrowed by a filter, DELETED
 * records hidden unless asked for. Below them, the form that creates a record
 * (federation-form.ts).
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.ts';
import { CreateFederationForm } from './federation-form.ts';
import { BASE, PAGE_SIZE, useRecordPages } from './federation-list.ts';
import { Badge, ErrorNote, html, useAction, useApi, when } from './ui.ts';

/** The filter is sent once typing pauses this long, not at every key. */
const FILTER_PAUSE_MS = 300;

/** Why a record left PAIRED (its `status_reason`), as an operator acts on it. */
const STATUS_REASONS: Record<string, string> = {
  operator_disconnect: 'disconnected here',
  operator_forced: 'disconnected here without the peer',
  peer_disconnect: 'the peer disconnected',
  peer_deleted: 'the peer deleted its record',
  peer_not_paired: 'the peer no longer holds the pairing: pair anew, with new records on both sides',
  deleted: 'deleted here',
};

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
      ${
        record.status_reason
          ? html`<dt>Why</dt><dd>${STATUS_REASONS[record.status_reason] ?? record.status_reason}
              <span class="muted small"> (${record.status_reason})</span></dd>`
          : null
      }
      <dt>Id</dt><dd><code>${record.id}</code></dd>
      <dt>Role</dt><dd>${record.role}</dd>
      <dt>Peer</dt><dd>${route ? `${route.hostname} (${route.ip})` : 'not known yet'}</dd>
      <dt>Last ping</dt><dd>${when(record.last_ping)}</dd>
      <dt>Identity mode</dt><dd>${record.identity_mode ?? '—'}</dd>
      <dt>Allowlist</dt><dd>${allowlist.data ? `${allowlist.data.length} user(s)` : '…'}</dd>
      <dt>Managed by</dt>
      <dd>
        ${record.declared_as ? html`<code>meshgate federation apply</code> (peer ${record.declared_as})` : 'hand'}
      </dd>
    </dl>
    ${
      record.name_collision
        ? html`<p class="error">Another paired record is also named ${name}: a mesh call by that name is refused
            (<code>mesh_target_ambiguous</code>); select this one by its id.</p>`
        : null
    }
    <div class="actions">
      ${
        // The API pairs an initiator's record only while it is PAIRING: an ended one is replaced, not re-paired.
        record.status === 'PAIRING' && record.role === 'initiator'
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
      ${
        // A deleted record's key is destroyed: there is no connection left to diagnose.
        record.status !== 'DELETED'
          ? html`<button disabled=${action.busy} onClick=${diagnose}>Diagnose ${name}</button>`
          : null
      }
    </div>
    <${ErrorNote} error=${action.error} />
    ${report ? html`<${Checklist} report=${report} />` : null}
  </article>`;
}

/** The filter box and the DELETED toggle; the box's text reaches the API once typing pauses. */
function ListControls({ list }: { list: ReturnType<typeof useRecordPages> }) {
  const [text, setText] = useState(list.q);
  const { filter } = list;
  useEffect(() => {
    const timer = setTimeout(() => filter(text.trim()), FILTER_PAUSE_MS);
    return () => clearTimeout(timer);
  }, [text, filter]);
  return html`<div class="field" role="search" aria-label="Federation records">
    <label for="fed-filter">Filter</label>
    <input id="fed-filter" type="search" value=${text} maxlength="128" autocomplete="off"
      aria-describedby="fed-filter-hint" onInput=${(e: any) => setText(e.currentTarget.value)} />
    <span id="fed-filter-hint" class="muted">peer name or record id</span>
    <label class="check">
      <input type="checkbox" checked=${list.withDeleted}
        onChange=${(e: any) => list.showDeleted(e.currentTarget.checked)} />
      Show deleted records
    </label>
  </div>`;
}

function Pager({ list, shown }: { list: ReturnType<typeof useRecordPages>; shown: number }) {
  if (list.first === 1 && !list.more) return null;
  const onScreen = shown ? `Records ${list.first}–${list.first + shown - 1}` : 'No records on this page';
  return html`<nav class="actions" aria-label="Federation record pages">
    <button disabled=${!list.previousPage} onClick=${list.previousPage}>Previous ${PAGE_SIZE}</button>
    <span aria-live="polite">${onScreen}</span>
    <button disabled=${!list.nextPage} onClick=${list.nextPage}>Next ${PAGE_SIZE}</button>
  </nav>`;
}

export function FederationPage() {
  const list = useRecordPages();
  const rows = list.rows;
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Federation</h2>
    <${ListControls} list=${list} />
    <${ErrorNote} error=${list.error} />
    ${rows === null ? html`<p aria-busy="true">Loading…</p>` : null}
    ${
      rows?.length === 0
        ? html`<p>${list.q ? `No federation records match “${list.q}”.` : 'No federation records.'}</p>`
        : null
    }
    <div class="cards">
      ${(rows ?? []).map((r) => html`<${FederationCard} key=${r.id} record=${r} onChange=${list.reload} />`)}
    </div>
    <${Pager} list=${list} shown=${rows?.length ?? 0} />
    <${CreateFederationForm} onCreated=${list.reload} />
  </section>`;
}
