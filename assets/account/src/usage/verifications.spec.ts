import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { VerificationOutcomeCounts, VerificationOutcomes } from '../../../../packages/client/src/types.js';
import { ApiError } from '../errors.js';
import { loadPage } from '../test/page.js';
import { fillBuckets, loadVerifications, queryOf, verificationsView } from './verifications.js';

/** 2026-11-27 09:41 UTC. */
const NOW = Date.parse('2026-11-27T09:41:12Z');
const counts = (over: Partial<VerificationOutcomeCounts>): VerificationOutcomeCounts => ({
  valid: 0,
  revoked: 0,
  expired: 0,
  disabled: 0,
  pending: 0,
  ip_refused: 0,
  rate_limited: 0,
  credits_exhausted: 0,
  usage_exceeded: 0,
  insufficient_scope: 0,
  ...over,
});
/** Two days of the week with requests; the other five are left out, as the service does. */
const week: VerificationOutcomes = {
  granularity: 'day',
  from: '2026-11-21',
  to: '2026-11-27',
  buckets: [
    { start: '2026-11-23T00:00:00.000Z', outcomes: counts({ valid: 30, rate_limited: 10 }) },
    { start: '2026-11-27T00:00:00.000Z', outcomes: counts({ valid: 6, insufficient_scope: 2 }) },
  ],
};
const subject = { subject: 'ingest', id: 'verifications-k1' };
/** Each bar's rectangles, bottom first: [class, height]. */
const bars = (el: HTMLElement) =>
  [...el.querySelectorAll('svg.chart rect')].map((r) => [r.getAttribute('class'), Number(r.getAttribute('height'))]);

describe('the verification outcomes chart', () => {
  beforeEach(loadPage);

  it('asks for the days (or hours) its bars fall on', () => {
    expect(queryOf('week', NOW)).toEqual({ from: '2026-11-21', to: '2026-11-27', granularity: 'day' });
    // The last 24 hours reach back into yesterday.
    expect(queryOf('day', NOW)).toEqual({ from: '2026-11-26', to: '2026-11-27', granularity: 'hour' });
  });

  it('fills the days the service left out with zeros, so every bar is a day of the last 7, today last', () => {
    const columns = fillBuckets(week, 'week', NOW);
    expect(columns.map((c) => c.label)).toEqual([
      '2026-11-21',
      '2026-11-22',
      '2026-11-23',
      '2026-11-24',
      '2026-11-25',
      '2026-11-26',
      '2026-11-27',
    ]);
    expect(columns.map((c) => c.values.reduce((a, b) => a + b, 0))).toEqual([0, 0, 40, 0, 0, 0, 8]);
    const hours = fillBuckets(
      {
        granularity: 'hour',
        from: '2026-11-26',
        to: '2026-11-27',
        buckets: [{ start: '2026-11-27T09:00:00.000Z', outcomes: counts({ revoked: 1 }) }],
      },
      'day',
      NOW,
    );
    expect(hours).toHaveLength(24);
    expect(hours[0]!.label).toBe('2026-11-26 10:00 UTC');
    expect(hours.at(-1)).toEqual({ label: '2026-11-27 09:00 UTC', values: [0, 1, 0, 0, 0, 0, 0, 0, 0, 0] });
  });

  it('stacks each day’s outcomes in one bar, valid at the bottom, scaled to the busiest day', () => {
    const el = verificationsView(week, 'week', NOW, subject);
    const drawn = bars(el);
    // Seven bars: five empty lines and two stacks.
    expect(drawn.filter(([cls]) => cls === 'bar zero')).toHaveLength(5);
    const stacks = drawn.filter(([cls]) => cls !== 'bar zero');
    expect(stacks.map(([cls]) => cls)).toEqual([
      'bar layer-valid',
      'bar layer-rate_limited',
      'bar layer-valid',
      'bar layer-insufficient_scope',
    ]);
    // The busiest day fills the plot (48 units less 2); its parts in proportion 30:10.
    const [valid, limited] = [stacks[0]![1] as number, stacks[1]![1] as number];
    expect(valid + limited).toBeCloseTo(46, 1);
    expect(valid / limited).toBeCloseTo(3, 5);
    // A part sits on the one below it.
    const rects = [...el.querySelectorAll('svg.chart rect:not(.zero)')];
    expect(Number(rects[0]!.getAttribute('y'))).toBeCloseTo(Number(rects[1]!.getAttribute('y')) + limited, 1);
  });

  it('names each outcome that occurred, with its count, in a legend, and says the same in a table for screen readers', () => {
    const el = verificationsView(week, 'week', NOW, subject);
    expect(el.querySelector('figcaption > span')!.textContent).toBe('Last 7 days: 48 requests');
    expect([...el.querySelectorAll('.chart-legend li')].map((li) => li.textContent)).toEqual([
      'Valid 36',
      'Rate limited 10',
      'Missing scope 2',
    ]);
    expect(el.querySelector('.chart-legend .swatch')!.getAttribute('aria-hidden')).toBe('true');
    expect(el.querySelector('svg')!.getAttribute('aria-hidden')).toBe('true');
    const table = el.querySelector('table#table-verifications-k1')!;
    expect(table.classList.contains('visually-hidden')).toBe(true);
    expect(table.querySelector('caption')!.textContent).toBe('Requests with ingest per day by outcome, last 7 days');
    expect([...table.querySelectorAll('thead th')].map((th) => th.textContent)).toEqual([
      'Day (UTC)',
      'Valid',
      'Rate limited',
      'Missing scope',
      'Total',
    ]);
    const rows = [...table.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((cell) => cell.textContent));
    expect(rows).toHaveLength(7);
    expect(rows[2]).toEqual(['2026-11-23', '30', '10', '0', '40']);
    expect(rows[3]).toEqual(['2026-11-24', '0', '0', '0', '0']);

    // One outcome alone is still named and coloured as that outcome.
    const calm = { ...week, buckets: [{ start: '2026-11-27T00:00:00.000Z', outcomes: counts({ valid: 1 }) }] };
    const one = verificationsView(calm, 'week', NOW, subject);
    expect(one.querySelector('figcaption > span')!.textContent).toBe('Last 7 days: 1 request');
    expect([...one.querySelectorAll('.chart-legend li')].map((li) => li.textContent)).toEqual(['Valid 1']);
    expect(bars(one).at(-1)).toEqual(['bar layer-valid', 46]);
  });

  it('says so when nothing was verified in the period, instead of an empty chart', () => {
    const empty = verificationsView({ ...week, buckets: [] }, 'week', NOW, subject);
    expect(empty.textContent).toBe('No verifications in the last 7 days.');
    expect(empty.querySelector('svg')).toBeNull();
    // A bucket from before the period is not a verification in it.
    const old = { ...week, buckets: [{ start: '2026-11-20T00:00:00.000Z', outcomes: counts({ valid: 3 }) }] };
    expect(verificationsView(old, 'week', NOW, subject).textContent).toBe('No verifications in the last 7 days.');
  });

  it('loads the last 7 days, switches to the last 24 hours by hour, and shows a failure in place with “Try again”', async () => {
    const fetch = vi.fn(async () => week);
    const slot = document.createElement('div');
    document.body.append(slot);
    await loadVerifications({ ...subject, fetch, now: () => NOW }, slot);
    expect(fetch).toHaveBeenCalledWith({ from: '2026-11-21', to: '2026-11-27', granularity: 'day' });
    expect(slot.querySelectorAll('svg.chart')).toHaveLength(1);
    const toggle = slot.querySelector('.period-toggle')!;
    expect(toggle.getAttribute('role')).toBe('group');
    const [days, hours] = [...toggle.querySelectorAll('button')];
    expect([days!.getAttribute('aria-pressed'), hours!.getAttribute('aria-pressed')]).toEqual(['true', 'false']);

    fetch.mockImplementationOnce(() => Promise.reject(new ApiError(new Response(null, { status: 503 }), null)));
    hours!.click();
    expect([days!.getAttribute('aria-pressed'), hours!.getAttribute('aria-pressed')]).toEqual(['false', 'true']);
    expect(fetch).toHaveBeenLastCalledWith({ from: '2026-11-26', to: '2026-11-27', granularity: 'hour' });
    await vi.waitFor(() => expect(slot.querySelector('.alert button.retry')).not.toBeNull());
    expect(slot.querySelector('svg.chart')).toBeNull();

    fetch.mockImplementationOnce(async () => ({ ...week, granularity: 'hour', buckets: [] }));
    slot.querySelector<HTMLButtonElement>('.alert button.retry')!.click();
    await vi.waitFor(() => expect(slot.textContent).toContain('No verifications in the last 24 hours.'));
    expect(fetch).toHaveBeenLastCalledWith({ from: '2026-11-26', to: '2026-11-27', granularity: 'hour' });
    expect(slot.querySelector('.alert')).toBeNull();
  });
});
