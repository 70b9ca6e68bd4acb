/**
 * Routing: the live table, an edit form checked by the API's dry run before
 * anything is applied, and the smoke checks the gateway runs against its own
 * origin after a change (the same checks as `meshgate smoke`).
 */
import { useState } from 'preact/hooks';
import { api } from './api.ts';
import { Badge, ErrorNote, html, Table, useAction, useApi } from './ui.ts';

interface Problem {
  field?: string;
  message?: string;
}

function problemText(p: Problem | string): string {
  return typeof p === 'string' ? p : [p.field, p.message].filter(Boolean).join(': ') || JSON.stringify(p);
}

function SmokeResults({
  result,
}: {
  result: { ok: boolean; checks: { check: string; status: string; detail: string }[] };
}) {
  return html`<div aria-live="polite">
    <h3>Smoke checks: ${result.ok ? 'all pass' : 'failures'}</h3>
    <${Table}
      caption="Smoke checks"
      rows=${result.checks}
      columns=${[
        ['Check', (c: any) => c.check],
        ['Result', (c: any) => html`<${Badge} value=${c.status} />`],
        ['Detail', (c: any) => c.detail],
      ]}
    />
  </div>`;
}

/**
 * Keyed by the table's update time: a new table after apply starts a fresh form, so the smoke results live in the page.
 */
function EditForm({ table, admin, onApplied }: { table: any; admin: boolean; onApplied: (smoke: any) => void }) {
  const [prefixes, setPrefixes] = useState<Record<string, string>>({ ...table.service_prefixes });
  const [enabled, setEnabled] = useState<Record<string, boolean>>({ ...table.enabled_services });
  const [problems, setProblems] = useState<(Problem | string)[]>([]);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    action.run(async () => {
      const patch = { service_prefixes: prefixes, enabled_services: enabled };
      const verdict = await api('POST', '/config/routing/validate', patch);
      setProblems(verdict.problems);
      if (!verdict.valid) return;
      await api('PATCH', '/config/routing', patch);
      onApplied(await api('POST', '/serving/smoke'));
    });
  };
  const services = Object.keys(table.service_prefixes);
  return html`<form onSubmit=${submit} aria-labelledby="edit-title">
    <h3 id="edit-title">Edit routing</h3>
    <fieldset disabled=${!admin || action.busy}>
      ${services.map(
        (s) => html`<div class="field">
          <label for=${`prefix-${s}`}>${s} prefix</label>
          <input id=${`prefix-${s}`} value=${prefixes[s]}
            onInput=${(e: any) => setPrefixes({ ...prefixes, [s]: e.currentTarget.value })} />
          <label class="check"><input type="checkbox" checked=${enabled[s] !== false}
            onChange=${(e: any) => setEnabled({ ...enabled, [s]: e.currentTarget.checked })} /> ${s} enabled</label>
        </div>`,
      )}
      <button type="submit">Validate and apply</button>
    </fieldset>
    ${
      problems.length > 0
        ? html`<div role="alert" class="error">
            <p>Not applied — the table has problems:</p>
            <ul>${problems.map((p) => html`<li>${problemText(p)}</li>`)}</ul>
          </div>`
        : null
    }
    <${ErrorNote} error=${action.error} />
  </form>`;
}

export function RoutingPage({ admin }: { admin: boolean }) {
  const live = useApi<any>('/config/routing');
  const [smoke, setSmoke] = useState<any>(null);
  const applied = (result: any) => {
    setSmoke(result);
    live.reload();
  };
  const rows = live.data
    ? Object.entries(live.data.service_prefixes).map(([service, prefix]) => ({
        service,
        prefix,
        on: live.data.enabled_services[service] !== false,
      }))
    : null;
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Routing</h2>
    <${ErrorNote} error=${live.error} />
    <${Table}
      caption="Live routing table"
      rows=${rows}
      columns=${[
        ['Service', (r: any) => r.service],
        ['Prefix', (r: any) => html`<code>${r.prefix}</code>`],
        ['Enabled', (r: any) => (r.on ? 'yes' : 'no')],
      ]}
    />
    ${
      live.data && admin
        ? html`<${EditForm} key=${live.data.updated_at} table=${live.data} admin=${admin} onApplied=${applied} />`
        : null
    }
    ${smoke ? html`<${SmokeResults} result=${smoke} />` : null}
  </section>`;
}
