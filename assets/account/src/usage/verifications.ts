// What the requests with a key (or with every key of the org) were decided, as a bar per day (last
// 7 days) or per hour (last 24 hours) stacked by outcome: the usage charts' barChart with a layer
// per outcome, a legend with each outcome's count, and the table for screen readers.
import type {
  VerificationOutcomeCounts,
  VerificationOutcomes,
  VerificationsQuery,
} from '../../../../packages/client/src/types.js';
import { h, showAlert } from '../dom.js';
import { handledElsewhere, isMissingRoute } from '../errors.js';
import { barChart, type Column } from './chart.js';

export type Outcome = keyof VerificationOutcomeCounts;

/** Every outcome the service counts, in the order they stack (admitted at the bottom). */
export const OUTCOME_LABELS: Readonly<Record<Outcome, string>> = {
  valid: 'Valid',
  revoked: 'Revoked',
  expired: 'Expired',
  disabled: 'Disabled',
  pending: 'Pending approval',
  ip_refused: 'Network refused',
  rate_limited: 'Rate limited',
  credits_exhausted: 'Out of credits',
  usage_exceeded: 'Over the org’s meter',
  insufficient_scope: 'Missing scope',
};
const OUTCOMES = Object.keys(OUTCOME_LABELS) as Outcome[];

export type Period = 'week' | 'day';
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
interface PeriodSpec {
  button: string;
  /** As it reads in a sentence, and as it starts one. */
  span: string;
  Span: string;
  granularity: 'day' | 'hour';
  slots: number;
}
const PERIODS: Readonly<Record<Period, PeriodSpec>> = {
  week: { button: '7 days', span: 'last 7 days', Span: 'Last 7 days', granularity: 'day', slots: 7 },
  day: { button: '24 hours', span: 'last 24 hours', Span: 'Last 24 hours', granularity: 'hour', slots: 24 },
};
const stepOf = (period: Period) => (PERIODS[period].granularity === 'day' ? DAY_MS : HOUR_MS);
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The start (ms) of each bar of the period, oldest first, the current UTC day or hour last. */
export function slotStarts(period: Period, now: number): number[] {
  const step = stepOf(period);
  const last = Math.floor(now / step) * step;
  return Array.from({ length: PERIODS[period].slots }, (_, i) => last - (PERIODS[period].slots - 1 - i) * step);
}

/** The request for the period: the UTC days its bars fall on, by day or by hour. */
export function queryOf(period: Period, now: number): VerificationsQuery {
  const slots = slotStarts(period, now);
  return { from: isoDay(slots[0]!), to: isoDay(now), granularity: PERIODS[period].granularity };
}

/** A count per outcome for every bar of the period: the service leaves out hours and days without requests. */
export function fillBuckets(answer: VerificationOutcomes, period: Period, now: number): Column[] {
  const byStart = new Map(answer.buckets.map((b) => [Date.parse(b.start), b.outcomes]));
  return slotStarts(period, now).map((start) => {
    const counts = byStart.get(start);
    const iso = new Date(start).toISOString();
    return {
      label: period === 'week' ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`,
      values: OUTCOMES.map((o) => counts?.[o] ?? 0),
    };
  });
}

/** The chart (only the outcomes that occurred, as layers and in the legend), or the empty state. */
export function verificationsView(
  answer: VerificationOutcomes,
  period: Period,
  now: number,
  { subject, id }: { subject: string; id: string },
): HTMLElement {
  const columns = fillBuckets(answer, period, now);
  const seen = OUTCOMES.flatMap((o, i) => (columns.some((c) => c.values[i]! > 0) ? [i] : []));
  const { span, Span, granularity } = PERIODS[period];
  if (seen.length === 0) return h('p', { class: 'muted', 'data-empty': '', text: `No verifications in the ${span}.` });
  const total = columns.reduce((sum, c) => sum + c.values.reduce((a, b) => a + b, 0), 0);
  return barChart({
    title: `Requests with ${subject} per ${granularity} by outcome, ${span}`,
    id,
    rowHeader: granularity === 'day' ? 'Day (UTC)' : 'Hour (UTC)',
    layers: seen.map((i) => ({ name: OUTCOMES[i]!, label: OUTCOME_LABELS[OUTCOMES[i]!] })),
    columns: columns.map((c) => ({ label: c.label, values: seen.map((i) => c.values[i]!) })),
    caption: `${Span}: ${total.toLocaleString('en')} ${total === 1 ? 'request' : 'requests'}`,
    stacked: true,
  });
}

export interface VerificationSource {
  /** Names the chart (`data-chart`, the table's id). */
  id: string;
  /** What the requests were made with: "ingest", "every key of the org". */
  subject: string;
  fetch(query: VerificationsQuery): Promise<VerificationOutcomes>;
  now?: () => number;
}

/** Reads the period into `body`: a skeleton first, then the chart or the empty state; an error with "Try again" in place. */
async function loadPeriod(source: VerificationSource, body: HTMLElement, period: Period): Promise<void> {
  const now = (source.now ?? Date.now)();
  body.replaceChildren(h('div', { class: 'skeleton-chart', 'aria-hidden': 'true' }));
  try {
    body.replaceChildren(verificationsView(await source.fetch(queryOf(period, now)), period, now, source));
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (isMissingRoute(err))
      body.replaceChildren(
        h('p', { class: 'muted', text: 'Verification outcomes are not available on this deployment.' }),
      );
    else {
      const alert = h('div', { class: 'alert' });
      body.replaceChildren(alert);
      showAlert(alert, err, () => void loadPeriod(source, body, period));
    }
  }
}

/** A title, the period's toggle (7 days by day, 24 hours by hour) and the chart, into `slot`. */
export function loadVerifications(source: VerificationSource, slot: HTMLElement): Promise<void> {
  const body = h('div', { class: 'verifications-body' });
  const buttons = (Object.keys(PERIODS) as Period[]).map((period) =>
    h('button', {
      type: 'button',
      class: 'button secondary small',
      'data-period': period,
      'aria-pressed': String(period === 'week'),
      text: PERIODS[period].button,
      onclick: () => {
        for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.period === period));
        void loadPeriod(source, body, period);
      },
    }),
  );
  slot.replaceChildren(
    h('p', { class: 'facts-title', text: 'Verifications by outcome' }),
    h(
      'div',
      { class: 'period-toggle', role: 'group', 'aria-label': `Period of the verifications of ${source.subject}` },
      ...buttons,
    ),
    body,
  );
  return loadPeriod(source, body, 'week');
}
