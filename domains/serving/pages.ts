/**
 * The built-in HTML: the login page, and the summary the console's shell
 * shows before (or without) its script. The login script is a constant (its settings travel in data-
 * attributes), so a hash-pinned Content-Security-Policy allows exactly it.
 */
import { createHash } from 'node:crypto';

const LOGIN_SCRIPT =
  `
const form = document.getElementById('login');
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const data = new FormData(form);
  const error = document.getElementById('error');
  const body = new URLSearchParams({ username: data.get('username'), ` +
  `password: data.get('password'), grant_type: 'password' });
  const token = await fetch(form.dataset.tokenUrl, { method: 'POST', body });
  if (!token.ok) { error.textContent = 'Invalid username or password.'; return; }
  const { access_token } = await token.json();
  const session = await fetch(form.dataset.sessionUrl, { method: ` +
  `'POST', headers: { authorization: 'Bearer ' + access_token } });
  if (!session.ok) { error.textContent = 'Could not start a session.'; return; }
  location.assign((await session.json()).location);
});`;

const SCRIPT_HASH = createHash('sha256').update(LOGIN_SCRIPT).digest('base64');

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string, script = ''): string {
  return (
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font:16px/1.5 ` +
    `system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 ` +
    `1rem}code{background:#eee;padding:0 ` +
    `.2em}label{display:block;margin:.5rem 0}</style>
</head><body>
${body}${script ? `\n<script>${script}</script>` : ''}
</body></html>
`
  );
}

export const HTML_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'content-security-policy':
    `default-src 'self'; script-src 'sha256-${SCRIPT_HASH}'; ` + `style-src 'unsafe-inline'; frame-ancestors 'none'`,
};

export interface HomeInfo {
  clusterName: string;
  origin: string;
  prefixes: Readonly<Record<string, string>>;
}

/**
 * What the platform serves where, and the sign-in/out controls: the page
 * a browser without scripts sees at the frontend prefix (the console's
 * shell carries it until the console renders).
 */
export function homeSummary(info: HomeInfo): string {
  const p = info.prefixes;
  const rows = [
    ['Platform API', `${p.api}`],
    ['Models (OpenAI-compatible base)', `${p.models}/&lt;deployment_id&gt;/v1`],
    ['Apps', `${p.apps}/&lt;deployment_id&gt;/`],
    ['Tools', `${p.tools}/&lt;deployment_id&gt;/`],
  ]
    .map(([what, path]) => `<li>${what}: <code>${escapeHtml(info.origin)}${path}</code></li>`)
    .join('\n');
  return `<h1>${escapeHtml(info.clusterName)}</h1>
<p>This platform is served at <code>${escapeHtml(info.origin)}</code>.</p>
<ul>
${rows}
</ul>
<p><a href="/login">Sign in</a> · <a href="${escapeHtml(p.api ?? '/api')}/ping">API health</a></p>
<form method="post" action="/logout"><button type="submit">Sign out</button></form>`;
}

export function loginPage(info: { clusterName: string; tokenUrl: string; next: string }): string {
  const sessionUrl = `/login/session?next=${encodeURIComponent(info.next)}`;
  return page(
    `Sign in · ${info.clusterName}`,
    `<h1>Sign in to ${escapeHtml(info.clusterName)}</h1>
<form id="login" data-token-url="${escapeHtml(info.tokenUrl)}" data-session-url="${escapeHtml(sessionUrl)}">
<label>Username <input name="username" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
<p id="error" role="alert"></p>
</form>`,
    LOGIN_SCRIPT,
  );
}
