/**
 * Creating and changing a deployment from the console (administrators): the same `POST /serving/deployments` and
 * `PATCH /serving/deployments/{id}` the CLI and the SDK send, the API the only judge of the input. A 422 comes back
 * with each problem at a body field; the form shows it beside that field (aria-invalid, aria-describedby) and moves
 * the focus to the first one. Replicas are one per line: a URL, then optionally its weight.
 */
import { api } from './api.ts';
import { useFieldForm } from './field-form.ts';
import { html } from './ui.ts';

interface Draft {
  kind: 'model' | 'app' | 'tool';
  name: string;
  replicas: string;
  cookie: boolean;
  max_concurrent: string;
  queue_timeout_ms: string;
  requests_per_second: string;
  burst: string;
}

const EMPTY: Draft = {
  kind: 'model',
  name: '',
  replicas: '',
  cookie: false,
  max_concurrent: '',
  queue_timeout_ms: '',
  requests_per_second: '',
  burst: '',
};

interface TextInput {
  key: keyof Draft;
  /** The body field a problem about it is reported under. */
  field: string;
  label: string;
  hint: string;
}

const NAME: TextInput = { key: 'name', field: 'name', label: 'Name', hint: 'unique among deployments of its kind' };

/** The limits' inputs, in page order after the replicas. */
const LIMITS: TextInput[] = [
  { key: 'max_concurrent', field: 'max_concurrent', label: 'Max concurrent', hint: 'empty = the gateway default' },
  { key: 'queue_timeout_ms', field: 'queue_timeout_ms', label: 'Queue timeout (ms)', hint: 'empty = the default' },
  {
    key: 'requests_per_second',
    field: 'rate_limit',
    label: 'Rate limit (requests/s)',
    hint: 'per caller; empty = none',
  },
  { key: 'burst', field: 'rate_limit', label: 'Burst', hint: 'requests a caller may send at once' },
];

/** A record as the form's draft, to change it. */
export function draftOf(d: any): Draft {
  return {
    kind: d.kind,
    name: d.name,
    replicas: (d.upstreams ?? []).map((r: any) => (r.weight === 1 ? r.url : `${r.url} ${r.weight}`)).join('\n'),
    cookie: d.affinity === 'cookie',
    max_concurrent: d.max_concurrent === null ? '' : String(d.max_concurrent),
    queue_timeout_ms: d.queue_timeout_ms === null ? '' : String(d.queue_timeout_ms),
    requests_per_second: d.rate_limit ? String(d.rate_limit.requests_per_second) : '',
    burst: d.rate_limit ? String(d.rate_limit.burst) : '',
  };
}

const numberOrNull = (text: string) => (text.trim() === '' ? null : Number(text));

/** The body the API takes: what the form shows, blanks as the defaults; the kind and name only when created. */
function bodyOf(draft: Draft, creating: boolean) {
  const upstreams = draft.replicas
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([url]) => url)
    .map(([url, weight]) => ({ url, ...(weight ? { weight: Number(weight) } : {}) }));
  const rate = numberOrNull(draft.requests_per_second);
  return {
    ...(creating ? { kind: draft.kind, name: draft.name } : {}),
    upstreams,
    affinity: draft.cookie ? 'cookie' : 'none',
    max_concurrent: numberOrNull(draft.max_concurrent),
    queue_timeout_ms: numberOrNull(draft.queue_timeout_ms),
    rate_limit:
      rate === null ? null : { requests_per_second: rate, burst: numberOrNull(draft.burst) ?? Math.ceil(rate) },
  };
}

/**
 * `editing`: the record to change (its id), else a new one is created. The page gives each record's form its own
 * key, so the draft starts from the record once, and what is typed is never reset under the user.
 */
export function DeploymentForm({ editing, onDone }: { editing: any | null; onDone: () => void }) {
  const creating = editing === null;
  const { draft, setDraft, fieldErrors, error, busy, form, submit, set } = useFieldForm<Draft>({
    initial: creating ? EMPTY : draftOf(editing),
    empty: EMPTY,
    send: (sent) =>
      creating
        ? api('POST', '/serving/deployments', bodyOf(sent, true))
        : api('PATCH', `/serving/deployments/${encodeURIComponent(editing.id)}`, bodyOf(sent, false)),
    done: onDone,
    fieldOf: (reason) => (reason === 'deployment_name_taken' ? 'name' : undefined),
    marked: 'Not saved: correct the marked fields.',
  });
  const title = creating ? 'New deployment' : `Change ${editing.name}`;
  const shown = new Set<string>();
  const problem = (field: string, id: string) => {
    const message = fieldErrors[field];
    if (message === undefined || shown.has(field)) return null;
    shown.add(field);
    return { message, id: `${id}-error` };
  };
  const input = ({ key, field, label, hint }: TextInput) => {
    const id = `dep-${key}`;
    const here = problem(field, id);
    return html`<div class="field">
      <label for=${id}>${label}</label>
      <input id=${id} value=${draft[key]} onInput=${set(key)} autocomplete="off"
        aria-invalid=${here ? 'true' : undefined}
        aria-describedby=${[`${id}-hint`, here?.id].filter(Boolean).join(' ')} />
      <span id=${`${id}-hint`} class="muted">${hint}</span>
      ${here ? html`<span id=${here.id} class="error">${here.message}</span>` : null}
    </div>`;
  };
  const nameInput = creating ? input(NAME) : null;
  const replicasProblem = problem('upstreams', 'dep-replicas');
  return html`<form ref=${form} onSubmit=${submit} aria-label=${title} class="create" novalidate>
    <h3>${title}</h3>
    <fieldset disabled=${busy}>
      ${
        creating
          ? html`<div class="field">
              <label for="dep-kind">Kind</label>
              <select id="dep-kind" value=${draft.kind} onChange=${set('kind')}>
                <option value="model">model</option><option value="app">app</option><option value="tool">tool</option>
              </select>
            </div>`
          : null
      }
      ${nameInput}
      <div class="field">
        <label for="dep-replicas">Replicas</label>
        <textarea id="dep-replicas" rows="3" value=${draft.replicas} onInput=${set('replicas')}
          aria-invalid=${replicasProblem ? 'true' : undefined}
          aria-describedby=${['dep-replicas-hint', replicasProblem?.id].filter(Boolean).join(' ')}></textarea>
        <span id="dep-replicas-hint" class="muted">one per line: http(s):// or h2c:// URL, then its weight</span>
        ${replicasProblem ? html`<span id=${replicasProblem.id} class="error">${replicasProblem.message}</span>` : null}
      </div>
      ${LIMITS.map(input)}
      <div class="field">
        <label><input type="checkbox" checked=${draft.cookie}
          onChange=${(e: any) => setDraft({ ...draft, cookie: e.currentTarget.checked })} /> Cookie affinity</label>
      </div>
      <button type="submit">${creating ? 'Create deployment' : 'Save changes'}</button>
      ${creating ? null : html` <button type="button" onClick=${onDone}>Cancel</button>`}
    </fieldset>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </form>`;
}
