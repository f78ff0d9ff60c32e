// A 30-day bar chart: inline SVG for the eye, a table for screen readers.
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

export function chart(title: string, series: Point[], id: string): HTMLElement {
  const max = Math.max(1, ...series.map((p) => p.value));
  const width = 300;
  const height = 48;
  const bar = width / series.length;
  const plot = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    preserveAspectRatio: 'none',
    class: 'chart',
    'aria-hidden': 'true',
    focusable: 'false',
  });
  for (const [i, p] of series.entries()) {
    const barHeight = p.value === 0 ? 1 : Math.max(2, (p.value / max) * (height - 2));
    plot.append(
      svg('rect', {
        x: (i * bar + 1).toFixed(2),
        y: (height - barHeight).toFixed(2),
        width: (bar - 2).toFixed(2),
        height: barHeight.toFixed(2),
        class: p.value === 0 ? 'bar zero' : 'bar',
      }),
    );
  }
  const total = series.reduce((sum, p) => sum + p.value, 0);
  const table = h(
    'table',
    { class: 'visually-hidden', id: `table-${id}` },
    h('caption', { text: title }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Day (UTC)' }), h('th', { scope: 'col', text: 'Count' }))),
    h(
      'tbody',
      {},
      ...series.map((p) =>
        h('tr', {}, h('th', { scope: 'row', text: p.day }), h('td', { text: p.value.toLocaleString('en') })),
      ),
    ),
  );
  return h(
    'figure',
    { class: 'chart-figure', 'data-chart': id },
    plot,
    h('figcaption', { class: 'hint' }, h('span', { text: `Last 30 days: ${total.toLocaleString('en')} in total` })),
    table,
  );
}
