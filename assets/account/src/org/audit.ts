// The org's audit log, newest first, filtered by action (the route's own enum, so new actions
// appear by themselves) and period, with "Load more".
import type { AuditEvent, AuditEventPage, ListAuditEventsQuery } from '../../../../packages/client/src/types.js';
import { me, personName, type PageContext } from '../context.js';
import { announce, byId, h } from '../dom.js';
import { PAGE_SIZE } from '../keys/keys-panel.js';
import { DAY, timeCell } from '../time.js';
import { pagedTable, type PagedList } from './admin-list.js';

/** "you", a member's e-mail (GET /orgs/{id}/members), or what the event says. */
function actorName(ctx: PageContext, actor: AuditEvent['actor']): string {
  if (actor.type !== 'user') return actor.source ? `${actor.type} (${actor.source})` : actor.type;
  return personName(ctx, actor.id, actor.id ?? 'user');
}

function eventRow(ctx: PageContext, e: AuditEvent): HTMLElement {
  // A key is named as its owner named it (the event's details carry the name), else by id.
  const named = typeof e.details?.name === 'string' && e.details.name ? `“${e.details.name}”` : e.target.id;
  const target = `${e.target.type.replace('_', ' ')} ${named ?? ''}`;
  return h(
    'tr',
    {},
    h('td', { 'data-label': 'When' }, timeCell(e.created_at, '')),
    h('th', { scope: 'row', 'data-label': 'Action' }, h('code', { text: e.action })),
    h('td', { 'data-label': 'Who', text: actorName(ctx, e.actor) }),
    h('td', { 'data-label': 'Target' }, h('code', { class: 'masked-key', text: target })),
  );
}

/** The filter's actions, from the route's OpenAPI enum. */
function fillActions(ctx: PageContext): void {
  const select = byId<HTMLSelectElement>('audit-action');
  if (select.options.length > 1) return;
  const actions = ctx.doc.queryChoices('/orgs/{org_id}/audit-events', 'action');
  select.append(...actions.map((a) => h('option', { value: a, text: a })));
}

function query(cursor: string | undefined): ListAuditEventsQuery {
  const q: Record<string, unknown> = { limit: PAGE_SIZE };
  const action = byId<HTMLSelectElement>('audit-action').value;
  if (action) q.action = action;
  const sinceDays = Number(byId<HTMLSelectElement>('audit-since').value);
  if (sinceDays) q.since = new Date(Date.now() - sinceDays * DAY * 1000).toISOString();
  if (cursor) q.cursor = cursor;
  return q as ListAuditEventsQuery;
}

export function auditList(ctx: PageContext): PagedList<AuditEventPage> {
  const list = pagedTable<AuditEventPage>(ctx, {
    section: 'audit',
    emptyText: () =>
      byId<HTMLSelectElement>('audit-action').value
        ? 'No events match this filter. Clear it to see every event.'
        : 'Nothing has happened in this organisation yet.',
    fetch: (cursor) => {
      fillActions(ctx);
      return ctx.api.orgs.auditEvents(me(ctx).org_id, query(cursor));
    },
    rows: (data) => data.events.map((e) => eventRow(ctx, e)),
    caption: 'Audit log, newest first',
    headers: ['When', 'Action', 'Who', 'Target'],
  });
  byId('audit-filters').addEventListener('submit', (e) => {
    e.preventDefault();
    void list.load().then(() => announce('Audit log filtered.'));
  });
  return list;
}
