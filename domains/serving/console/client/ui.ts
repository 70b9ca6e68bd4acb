/** Shared pieces of every page: loading a resource, showing an error, a data table, a status badge. */
import { html } from 'htm/preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiFailure, api } from './api.ts';

export { html };

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  reload: () => void;
}

/** GETs `path` now and every `everyMs` (0: once); `reload()` fetches again at once. */
export function useApi<T = any>(path: string | null, everyMs = 0): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  useEffect(() => {
    if (path === null) return undefined;
    let live = true;
    api<T>('GET', path).then(
      (value) => live && (setData(value), setError(null)),
      (e: unknown) => live && setError(describe(e)),
    );
    const timer = everyMs > 0 ? setTimeout(reload, everyMs) : undefined;
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [path, tick, everyMs, reload]);
  return { data, error, reload };
}

export function describe(error: unknown): string {
  return error instanceof ApiFailure ? error.reason : String((error as Error)?.message ?? error);
}

export function ErrorNote({ error }: { error: string | null }) {
  return error ? html`<p class="error" role="alert">${error}</p>` : null;
}

export function Badge({ value }: { value: string | null | undefined }) {
  const text = value ?? '—';
  return html`<span class=${`badge badge-${text.toLowerCase().replace(/[^a-z]+/g, '-')}`}>${text}</span>`;
}

export type Column = [label: string, cell: (row: any) => unknown];

/** A table that becomes stacked cards on a narrow screen (console.css); `caption` names it for screen readers. */
export function Table({ caption, rows, columns }: { caption: string; rows: any[] | null; columns: Column[] }) {
  if (rows === null) return html`<p aria-busy="true">Loading…</p>`;
  if (rows.length === 0) return html`<p>No ${caption.toLowerCase()}.</p>`;
  return html`<table>
    <caption>${caption}</caption>
    <thead><tr>${columns.map(([label]) => html`<th scope="col">${label}</th>`)}</tr></thead>
    <tbody>
      ${rows.map(
        (row) => html`<tr>${columns.map(([label, cell]) => html`<td data-label=${label}>${cell(row)}</td>`)}</tr>`,
      )}
    </tbody>
  </table>`;
}

/** Runs an action, shows its error; `busy` disables the button while it runs. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');
