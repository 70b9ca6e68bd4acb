/**
 * The federation records a page at a time, however many there are. The API lists them in creation order by
 * `skip`/`limit` (at most 1,000 per call), filtered by `q` (name or id); it has no "all but DELETED" filter, so the
 * DELETED ones are skipped here, and a page is read on until it holds PAGE_SIZE records the operator sees. Each page
 * remembers where in the API's order it starts: Next starts where the page ended, Previous returns to where the page
 * before started. The page on screen is re-read every REFRESH_MS, a read at a time.
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from './api.ts';
import { describe } from './ui.ts';

export const BASE = '/cluster/federations';
export const PAGE_SIZE = 50;
/** Pairing moves on the peer too: the page re-reads its records this often. */
const REFRESH_MS = 2000;
/** The API's cap on `limit`. */
const MAX_LIMIT = 1000;

export interface RecordPage {
  rows: any[];
  /** Where in the API's order the next page starts; null on the last page. */
  next: number | null;
}

/** From `start` in the API's order: PAGE_SIZE records (DELETED ones left out unless `withDeleted`) and what follows. */
async function readPage(start: number, q: string, withDeleted: boolean): Promise<RecordPage> {
  const rows: any[] = [];
  // One record past the page says whether a next page exists; when DELETED ones are skipped, each further call asks
  // for twice as many, so a long run of them costs a few calls, not one per page.
  let limit = PAGE_SIZE + 1;
  for (let skip = start; ; skip += limit, limit = Math.min(MAX_LIMIT, limit * 2)) {
    const query = new URLSearchParams({ skip: String(skip), limit: String(limit), ...(q ? { q } : {}) });
    const batch = await api<any[]>('GET', `${BASE}?${query}`);
    for (const [i, record] of batch.entries()) {
      if (!withDeleted && record.status === 'DELETED') continue;
      if (rows.length === PAGE_SIZE) return { rows, next: skip + i };
      rows.push(record);
    }
    if (batch.length < limit) return { rows, next: null };
  }
}

interface View {
  q: string;
  withDeleted: boolean;
  /** Where each page read so far starts; the last is the page on screen. */
  starts: number[];
}

export function useRecordPages() {
  const [view, setView] = useState<View>({ q: '', withDeleted: false, starts: [0] });
  const [read, setRead] = useState<{ page: RecordPage; of: View } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  // Stable, so the filter box's pause is not restarted at every refresh.
  const filter = useCallback((q: string) => setView((v) => (v.q === q ? v : { ...v, q, starts: [0] })), []);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    readPage(view.starts[view.starts.length - 1] as number, view.q, view.withDeleted)
      .then(
        (page) => live && (setRead({ page, of: view }), setError(null)),
        (e: unknown) => live && setError(describe(e)),
      )
      .finally(() => {
        if (live) timer = setTimeout(reload, REFRESH_MS);
      });
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [view, tick, reload]);
  // Until the page asked for is read, the one on screen stays, and the pager waits: its ends belong to that page.
  const current = read?.of === view ? read.page : null;
  const next = current?.next ?? null;
  return {
    rows: read?.page.rows ?? null,
    error,
    reload,
    q: view.q,
    withDeleted: view.withDeleted,
    /** Whether a page follows the one on screen. */
    more: read ? read.page.next !== null : false,
    /** The position among the records shown of the first on screen (1-based). */
    first: ((read?.of ?? view).starts.length - 1) * PAGE_SIZE + 1,
    // A new filter, or the DELETED ones shown or hidden, starts again from the first page.
    filter,
    showDeleted: (withDeleted: boolean) => setView((v) => ({ ...v, withDeleted, starts: [0] })),
    nextPage: next === null ? null : () => setView((v) => ({ ...v, starts: [...v.starts, next] })),
    previousPage:
      current && view.starts.length > 1 ? () => setView((v) => ({ ...v, starts: v.starts.slice(0, -1) })) : null,
  };
}
