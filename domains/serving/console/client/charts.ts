/**
 * A deployment's last hour as pictures: requests per second, time to the answer's head (p50 and p99), and 4xx/5xx
 * answers, one point a minute, summed over every gateway process (`GET /serving/deployments/{id}/traffic`). Each
 * chart is an inline SVG with a text alternative that states its peak, so the figure is not only a picture.
 */
import { useState } from 'preact/hooks';
import { ErrorNote, html, useApi } from './ui.ts';

const REFRESH_MS = 10_000;
const WIDTH = 240;
const HEIGHT = 60;

interface Line {
  name: string;
  className: string;
  values: (number | null)[];
}

/** The points of one line; minutes without a value are left out. */
function points(values: (number | null)[], max: number): [x: number, y: number][] {
  const step = WIDTH / Math.max(1, values.length - 1);
  return values.flatMap((v, i) => (v === null ? [] : [[i * step, HEIGHT - (v / max) * HEIGHT] as [number, number]]));
}

/** A line through the minutes, and a dot on each minute that has a value (one minute alone is still seen). */
function Plot({ line, max }: { line: Line; max: number }) {
  const at = points(line.values, max);
  const path = at.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
  return html`<polyline class=${line.className} points=${path} />
    ${at.map(([x, y]) => html`<circle class=${line.className} cx=${x.toFixed(1)} cy=${y.toFixed(1)} r="1.5" />`)}`;
}

function Chart({ title, unit, lines }: { title: string; unit: string; lines: Line[] }) {
  const peak = Math.max(0, ...lines.flatMap((l) => l.values.filter((v): v is number => v !== null)));
  const max = peak > 0 ? peak : 1;
  const summary = lines
    .map((l) => `${l.name} peak ${Math.max(0, ...l.values.filter((v): v is number => v !== null))}${unit}`)
    .join(', ');
  return html`<figure class="chart">
    <figcaption>${title} <span class="muted small">(peak ${peak}${unit})</span></figcaption>
    <svg viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} width=${WIDTH} height=${HEIGHT} role="img"
      aria-label=${`${title} over the last hour: ${summary}`}>
      ${lines.map((l) => html`<${Plot} line=${l} max=${max} />`)}
    </svg>
    ${
      lines.length > 1
        ? html`<div class="legend small">${lines.map((l) => html`<span class=${l.className}>${l.name}</span> `)}</div>`
        : null
    }
  </figure>`;
}

function Charts({ id }: { id: string }) {
  const minutes = useApi<any[]>(`/serving/deployments/${encodeURIComponent(id)}/traffic`, REFRESH_MS);
  const m = minutes.data ?? [];
  const of = (key: string) => m.map((x) => x[key] as number | null);
  return html`<div class="charts">
    <${ErrorNote} error=${minutes.error} />
    <${Chart} title="Requests per second" unit="/s"
      lines=${[{ name: 'requests', className: 'line-a', values: of('requests_per_second') }]} />
    <${Chart} title="Time to first byte" unit=" ms" lines=${[
      { name: 'p50', className: 'line-a', values: of('head_p50_ms') },
      { name: 'p99', className: 'line-b', values: of('head_p99_ms') },
    ]} />
    <${Chart} title="Errors per minute" unit="" lines=${[
      { name: '4xx', className: 'line-a', values: of('client_errors') },
      { name: '5xx', className: 'line-b', values: of('server_errors') },
    ]} />
  </div>`;
}

/** The charts behind a disclosure: fetched only while open. */
export function TrafficCharts({ id, name }: { id: string; name: string }) {
  const [open, setOpen] = useState(false);
  return html`<details onToggle=${(e: any) => setOpen(e.currentTarget.open)}>
    <summary aria-label=${`Last hour of ${name}`}>Last hour</summary>
    ${open ? html`<${Charts} id=${id} />` : null}
  </details>`;
}
