/**
 * The console's entry: who is signed in (GET whoami with the session
 * cookie), the navigation, and the page named by the URL fragment. Pages an
 * account may not use are not offered; the API refuses them anyway.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { UsersPage } from './admin.ts';
import { CLUSTER, loginUrl } from './api.ts';
import { FederationPage } from './federation.ts';
import { CatalogPage, DeploymentsPage, JobsPage, RetrievalPage } from './pages.ts';
import { RoutingPage } from './routing.ts';
import { ErrorNote, html, useApi } from './ui.ts';

interface PageDef {
  title: string;
  admin: boolean;
  view: (props: { admin: boolean }) => unknown;
}

const PAGES: Record<string, PageDef> = {
  deployments: { title: 'Deployments', admin: false, view: DeploymentsPage },
  jobs: { title: 'Jobs', admin: false, view: JobsPage },
  catalog: { title: 'Catalog', admin: false, view: CatalogPage },
  retrieval: { title: 'Retrieval', admin: false, view: RetrievalPage },
  routing: { title: 'Routing', admin: false, view: RoutingPage },
  federation: { title: 'Federation', admin: true, view: FederationPage },
  users: { title: 'Users', admin: true, view: UsersPage },
};

function currentPage(): string {
  return location.hash.replace(/^#\/?/, '') || 'deployments';
}

function Console() {
  const me = useApi<any>('/whoami');
  const [page, setPage] = useState(currentPage);
  useEffect(() => {
    const follow = () => setPage(currentPage());
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  useEffect(() => {
    if (me.error === 'Not authenticated') location.assign(loginUrl());
  }, [me.error]);
  if (!me.data) return html`<main><${ErrorNote} error=${me.error} /><p aria-busy="true">Signing in…</p></main>`;
  const admin = me.data.roles.includes('admin') && me.data.source !== 'mesh';
  const offered = Object.entries(PAGES).filter(([, p]) => admin || !p.admin);
  const def = PAGES[page] && (admin || !PAGES[page].admin) ? PAGES[page] : PAGES.deployments;
  const View = def?.view as (props: { admin: boolean }) => unknown;
  return html`<header class="top">
      <p class="brand">${CLUSTER} · console</p>
      <nav aria-label="Console pages">
        <ul>
          ${offered.map(
            ([key, p]) =>
              html`<li><a href=${`#/${key}`} aria-current=${key === page ? 'page' : undefined}>${p.title}</a></li>`,
          )}
        </ul>
      </nav>
      <form method="post" action="/logout" class="who">
        <span>${me.data.username}${admin ? ' (admin)' : ''}</span> <button type="submit">Sign out</button>
      </form>
    </header>
    <main id="main">
      <${View} admin=${admin} />
    </main>`;
}

const root = document.getElementById('app') as HTMLElement;
root.textContent = '';
render(html`<${Console} />`, root);
