/**
 * The API reference page: one self-contained HTML file that fetches the document beside it and
 * renders every operation. Nothing comes from a CDN (the gateway and its users may be offline),
 * and the Content-Security-Policy admits only this page's own script and style by hash
 * (CSP Level 3 hash sources), so a document value can never run as code; the script also
 * writes every value with textContent, never as markup.
 */
import { createHash } from 'node:crypto';

const STYLE =
  `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 70rem; padding: 1rem 2rem; color: #1d232b; }
h2 { border-bottom: 1px solid #ccd; margin-top: 2rem; text-transform: capitalize; }
details { border: 1px solid #dde; border-radius: 4px; margin: .35rem 0; }
summary { cursor: pointer; padding: .4rem .6rem; }
summary code { font-weight: 600; }
.m { display: inline-block; min-width: 4.5rem; font: 600 13px monospace; }
.get { color: #1565c0 } .post { color: #2e7d32 } .put, .patch { color: #8d6e00 } .delete { color: #c62828 }
.body { padding: 0 1rem 1rem; }
pre { background: #f5f6f8; padding: .6rem; overflow: auto; font-size: 12px; max-height: 24rem; }
table { border-collapse: collapse; } td, th { border: 1px solid #dde; ` +
  `padding: .2rem .5rem; text-align: left; vertical-align: top; }
`;

const SCRIPT =
  `
const el = (tag, text, cls) => { const e = ` +
  `document.createElement(tag); if (text !== undefined) e.textContent = ` +
  `text; if (cls) e.className = cls; return e; };
const json = (v) => el('pre', JSON.stringify(v, null, 2));
function operation(path, method, op) {
  const d = el('details'); const s = el('summary');
  s.append(el('span', method.toUpperCase(), 'm ' + method), el('code', path), ' ' + (op.summary || ''));
  d.append(s); const b = el('div', undefined, 'body'); d.append(b);
  b.append(el('p', op.security && op.security.length ? 'Bearer token' ` +
  `+ (op.security.length > 1 ? ' (optional)' : '') : 'Anonymous'));
  if (op.parameters) {
    const t = el('table'); t.append(el('tr')); ` +
  `t.firstChild.append(el('th', 'parameter'), el('th', 'in'), el('th', ` +
  `'schema'));
    for (const p of op.parameters) { const r = el('tr'); ` +
  `r.append(el('td', p.name + (p.required ? ' *' : '')), el('td', p.in), ` +
  `el('td', JSON.stringify(p.schema))); t.append(r); }
    b.append(t);
  }
  if (op.requestBody) for (const [type, c] of ` +
  `Object.entries(op.requestBody.content)) b.append(el('h4', 'Body: ' + ` +
  `type), json(c.schema));
  for (const [status, r] of Object.entries(op.responses)) {
    b.append(el('h4', status)); for (const line of (r.description || '').split('\\n\\n')) b.append(el('p', line));
    for (const c of Object.values(r.content || {})) b.append(json(c.schema));
  }
  return d;
}
fetch('openapi.json').then((r) => r.json()).then((doc) => {
  const main = document.getElementById('api');
  main.append(el('h1', doc.info.title + ' ' + doc.info.version), ` +
  `el('p', doc.info.description), el('p', 'Served below ' + ` +
  `doc.servers[0].url));
  const tags = new Map();
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) {
    const tag = op.tags[0]; if (!tags.has(tag)) tags.set(tag, []); tags.get(tag).push(operation(path, method, op));
  }
  for (const [tag, ops] of [...tags].sort()) main.append(el('h2', tag), ...ops);
}, (e) => document.getElementById('api').append(el('p', 'The document could not be loaded: ' + e)));
`;

const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

export const REFERENCE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>meshgate API</title><style>${STYLE}</style></head>
<body><main id="api"></main><script>${SCRIPT}</script></body></html>
`;

/** Headers of the page: its own script and style only, the document fetched from this origin, no framing. */
export const REFERENCE_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': [
    "default-src 'none'",
    `script-src ${hash(SCRIPT)}`,
    `style-src ${hash(STYLE)}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};
