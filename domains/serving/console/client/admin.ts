/** Users and their grants: native-realm administrators only (the API refuses anyone else). */
import { useState } from 'preact/hooks';
import { ErrorNote, html, Table, useApi } from './ui.ts';

function Grants({ user }: { user: any }) {
  const grants = useApi<any[]>(`/authz/subjects/${encodeURIComponent(`user:${user.id}`)}/grants`);
  return html`<div aria-live="polite">
    <${ErrorNote} error=${grants.error} />
    <${Table}
      caption=${`Grants of ${user.username}`}
      rows=${grants.data}
      columns=${[
        ['Relation', (g: any) => g.relation ?? g.permission ?? '—'],
        ['Object', (g: any) => g.object ?? [g.namespace, g.object_id].filter(Boolean).join(':')],
      ]}
    />
  </div>`;
}

export function UsersPage() {
  const users = useApi<any[]>('/auth/users');
  const [chosen, setChosen] = useState<any>(null);
  return html`<section aria-labelledby="page-title">
    <h2 id="page-title">Users and grants</h2>
    <${ErrorNote} error=${users.error} />
    <${Table}
      caption="Users"
      rows=${users.data}
      columns=${[
        ['User', (u: any) => u.username],
        ['Roles', (u: any) => u.roles.join(', ') || '—'],
        ['Active', (u: any) => (u.active ? 'yes' : 'no')],
        ['Grants', (u: any) => html`<button onClick=${() => setChosen(u)}>Grants of ${u.username}</button>`],
      ]}
    />
    ${chosen ? html`<${Grants} key=${chosen.id} user=${chosen} />` : null}
  </section>`;
}
