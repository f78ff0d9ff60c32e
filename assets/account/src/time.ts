// Times as a person reads them: relative in the page, exact in tooltips.
import { h } from './dom.js';

export const DAY = 86400;

const rtfAuto = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'always' });

/** "just now", "5 minutes ago", "yesterday", "in 30 days", "in 6 months", "in 1 year". */
export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = (Date.parse(iso) - now) / 1000;
  const abs = Math.abs(seconds);
  if (abs < 45) return seconds <= 0 ? 'just now' : 'in a few seconds';
  if (abs < 3600) return rtf.format(Math.round(seconds / 60), 'minute');
  if (abs < DAY) return rtf.format(Math.round(seconds / 3600), 'hour');
  if (abs < 60 * DAY) return rtfAuto.format(Math.round(seconds / DAY), 'day');
  if (abs < 365 * DAY) return rtf.format(Math.round(seconds / (30 * DAY)), 'month');
  return rtf.format(Math.round(seconds / (365 * DAY)), 'year');
}

/** "2026-11-22 14:05:09 UTC": exact and unambiguous, for tooltips. */
export function exactTime(iso: string): string {
  const d = new Date(iso).toISOString();
  return `${d.slice(0, 10)} ${d.slice(11, 19)} UTC`;
}

export function timeCell(iso: string | null | undefined, empty: string): HTMLElement {
  if (!iso) return h('span', { class: 'muted', text: empty });
  return h('time', { datetime: iso, title: exactTime(iso), text: relativeTime(iso) });
}

/** "Daily limits reset in 5 h 12 min (00:00 UTC)." */
export function resetText(iso: string, now = Date.now()): string {
  const totalMinutes = Math.floor(Math.max(0, Date.parse(iso) - now) / 60000);
  const hours = Math.floor(totalMinutes / 60);
  const minutes = totalMinutes % 60;
  const at = new Date(iso).toISOString().slice(11, 16);
  const span = totalMinutes < 1 ? 'less than a minute' : hours === 0 ? `${minutes} min` : `${hours} h ${minutes} min`;
  return `Daily limits reset in ${span} (${at} UTC).`;
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The last 30 UTC days, oldest first, today included. */
export function last30Days(now = Date.now()): string[] {
  return Array.from({ length: 30 }, (_, i) => isoDay(now - (29 - i) * DAY * 1000));
}
