// Bar charts: inline SVG for the eye, a table for screen readers. Plain bars of one value (the
// 30-day usage charts), or layers stacked in each bar (verification outcomes), with a legend.
import type { components } from '../../../../packages/client/src/generated/openapi.js';
import { h, svg } from '../dom.js';
import { last30Days } from '../time.js';

export type DailyUsage = components['schemas']['DailyUsage'];
export interface Point {
  day: string;
  value: number;
}

/** One value per day: the server's days (oldest first, zeros included), else the last 30 with zeros. */
export function seriesOf(rows: DailyUsage[], pick: (row: DailyUsage) => number): Point[] {
  if (rows.length > 0) return rows.map((r) => ({ day: r.day.slice(0, 10), value: pick(r) }));
  return last30Days().map((day) => ({ day, value: 0 }));
}

/** Everything a day's row charged: the query wallet, imports and captures. */
export const totalOf = (row: DailyUsage): number => row.mcp_queries.used + row.imports.used + row.captures.used;

/** One stacked part of every bar; `name` is its CSS class (`layer-<name>`: its colour). */
export interface Layer {
  name: string;
  label: string;
}
/** One bar: its label (the table's row header) and a value per layer, bottom first. */
export interface Column {
  label: string;
  values: number[];
}
export interface BarChartSpec {
  /** The table's caption. */
  title: string;
  id: string;
  /** The table's first column header ("Day (UTC)"). */
  rowHeader: string;
  layers: Layer[];
  columns: Column[];
  /** The visible line under the bars. */
  caption: string;
  /** Layers coloured each its own, named in a legend and summed in a Total column (even a single one). */
  stacked?: boolean;
}

const WIDTH = 300;
const HEIGHT = 48;
const fmt = (n: number) => n.toLocaleString('en');
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/**
 * The rectangles of one bar, stacked from the bottom, each of class `layer-<name>` (its colour)
 * when there are several layers; an empty bar is a 1-unit line.
 */
function bar(values: number[], names: string[] | null, i: number, width: number, max: number): SVGElement[] {
  const x = (i * width + 1).toFixed(2);
  const w = (width - 2).toFixed(2);
  if (sum(values) === 0) return [svg('rect', { x, y: HEIGHT - 1, width: w, height: 1, class: 'bar zero' })];
  // Every non-zero part stays visible (2 units), scaled back should that overfill the plot.
  const heights = values.map((v) => (v === 0 ? 0 : Math.max(2, (v / max) * (HEIGHT - 2))));
  const fit = Math.min(1, HEIGHT / sum(heights));
  let y = HEIGHT;
  return heights.flatMap((height, layer) => {
    if (height === 0) return [];
    y -= height * fit;
    const cls = names ? `bar layer-${names[layer]}` : 'bar';
    return [svg('rect', { x, y: y.toFixed(2), width: w, height: (height * fit).toFixed(2), class: cls })];
  });
}

export function barChart(spec: BarChartSpec): HTMLElement {
  const { layers, columns } = spec;
  const stacked = spec.stacked ?? false;
  const max = Math.max(1, ...columns.map((c) => sum(c.values)));
  const width = WIDTH / columns.length;
  const plot = svg('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    preserveAspectRatio: 'none',
    class: 'chart',
    'aria-hidden': 'true',
    focusable: 'false',
  });
  const names = stacked ? layers.map((l) => l.name) : null;
  for (const [i, column] of columns.entries()) plot.append(...bar(column.values, names, i, width, max));
  const headers = [spec.rowHeader, ...layers.map((l) => l.label), ...(stacked ? ['Total'] : [])];
  const table = h(
    'table',
    { class: 'visually-hidden', id: `table-${spec.id}` },
    h('caption', { text: spec.title }),
    h('thead', {}, h('tr', {}, ...headers.map((text) => h('th', { scope: 'col', text })))),
    h(
      'tbody',
      {},
      ...columns.map((c) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row', text: c.label }),
          ...c.values.map((v) => h('td', { text: fmt(v) })),
          stacked ? h('td', { text: fmt(sum(c.values)) }) : null,
        ),
      ),
    ),
  );
  const legend = stacked
    ? h(
        'ul',
        { class: 'chart-legend' },
        ...layers.map((layer, i) =>
          h(
            'li',
            { 'data-layer': layer.name },
            h('span', { class: `swatch layer-${layer.name}`, 'aria-hidden': 'true' }),
            `${layer.label} ${fmt(sum(columns.map((c) => c.values[i] ?? 0)))}`,
          ),
        ),
      )
    : null;
  return h(
    'figure',
    { class: 'chart-figure', 'data-chart': spec.id },
    plot,
    h('figcaption', { class: 'hint' }, h('span', { text: spec.caption }), legend),
    table,
  );
}

/** A 30-day chart of one value per day. */
export function chart(title: string, series: Point[], id: string): HTMLElement {
  const total = sum(series.map((p) => p.value));
  return barChart({
    title,
    id,
    rowHeader: 'Day (UTC)',
    layers: [{ name: 'count', label: 'Count' }],
    columns: series.map((p) => ({ label: p.day, values: [p.value] })),
    caption: `Last 30 days: ${fmt(total)} in total`,
  });
}
