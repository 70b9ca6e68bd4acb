/**
 * Creating a federation record: the same `POST /cluster/federations` the CLI
 * (`meshgate federation pair`) and the SDK send. The API is the only judge of
 * the input; a 422 comes back with each problem located at a body field, and
 * the form shows it next to that field (linked by aria-describedby, the field
 * marked aria-invalid) and moves the focus to the first one.
 */
import { api } from './api.ts';
import { useFieldForm } from './field-form.ts';
import { html } from './ui.ts';

interface Draft {
  remote_cluster_name: string;
  role: 'initiator' | 'receiver';
  address: string;
  hostname: string;
  preshared_key: string;
  shared_issuer_url: string;
}

const EMPTY: Draft = {
  remote_cluster_name: '',
  role: 'initiator',
  address: '',
  hostname: '',
  preshared_key: '',
  shared_issuer_url: '',
};

/** The form's inputs in page order, with the body field a problem about them is reported under. */
const INPUTS: { key: keyof Draft; field: string; label: string; type?: string; hint?: string }[] = [
  { key: 'remote_cluster_name', field: 'remote_cluster_name', label: 'Peer cluster name' },
  {
    key: 'address',
    field: 'remote_ips',
    label: 'Peer address',
    hint: 'IP or DNS name, with :port; the initiator only',
  },
  { key: 'hostname', field: 'remote_ips', label: 'Peer host name', hint: 'the name on its certificate (TLS SNI)' },
  {
    key: 'preshared_key',
    field: 'preshared_key',
    label: 'Pre-shared key',
    type: 'password',
    hint: 'the same key on both gateways',
  },
  {
    key: 'shared_issuer_url',
    field: 'shared_issuer_url',
    label: 'Shared issuer URL',
    hint: 'the identity provider both trust; empty = peer_kc',
  },
];

/** Refusals that are about one field although they are not a 422. */
const REASON_FIELD: Record<string, string> = { untrusted_federation_disabled: 'shared_issuer_url' };

function bodyOf(draft: Draft) {
  const address = draft.address.trim();
  return {
    remote_cluster_name: draft.remote_cluster_name,
    role: draft.role,
    preshared_key: draft.preshared_key,
    ...(address ? { remote_ips: [{ ip: address, hostname: draft.hostname.trim() || null, primary: true }] } : {}),
    ...(draft.shared_issuer_url.trim() ? { shared_issuer_url: draft.shared_issuer_url.trim() } : {}),
  };
}

export function CreateFederationForm({ onCreated }: { onCreated: () => void }) {
  const { draft, fieldErrors, error, busy, form, submit, set } = useFieldForm<Draft>({
    initial: EMPTY,
    empty: EMPTY,
    send: (sent) => api('POST', '/cluster/federations', bodyOf(sent)),
    done: onCreated,
    fieldOf: (reason) => REASON_FIELD[reason],
    marked: 'Not created: correct the marked fields.',
  });
  const shown = new Set<string>();
  return html`<form ref=${form} onSubmit=${submit} aria-labelledby="create-fed-title" class="create" novalidate>
    <h3 id="create-fed-title">New federation record</h3>
    <fieldset disabled=${busy}>
      <div class="field">
        <label for="fed-role">Role</label>
        <select id="fed-role" value=${draft.role} onChange=${set('role')}>
          <option value="initiator">initiator (pairs with the peer)</option>
          <option value="receiver">receiver (waits for the peer)</option>
        </select>
      </div>
      ${INPUTS.map(({ key, field, label, type, hint }) => {
        const message = fieldErrors[field];
        // A field's problem is shown once, beside the first input that sends it.
        const here = message !== undefined && !shown.has(field);
        if (here) shown.add(field);
        const id = `fed-${key}`;
        const described = [hint ? `${id}-hint` : '', here ? `${id}-error` : ''].filter(Boolean).join(' ');
        return html`<div class="field">
          <label for=${id}>${label}</label>
          <input id=${id} type=${type ?? 'text'} value=${draft[key]} onInput=${set(key)}
            autocomplete="off" aria-invalid=${here ? 'true' : undefined}
            aria-describedby=${described || undefined} />
          ${hint ? html`<span id=${`${id}-hint`} class="muted">${hint}</span>` : null}
          ${here ? html`<span id=${`${id}-error`} class="error">${message}</span>` : null}
        </div>`;
      })}
      <button type="submit">Create record</button>
    </fieldset>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </form>`;
}
