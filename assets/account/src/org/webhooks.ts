// The org's webhook endpoints with their state, each with its latest deliveries.
import type { Webhook } from '../../../../packages/client/src/types.js';
import { me, type PageContext } from '../context.js';
import { announce, byId, dataTable, h, showAlert } from '../dom.js';
import { handledElsewhere } from '../errors.js';
import { exactTime, timeCell } from '../time.js';
import { hiddenHeader, loadAdminList } from './admin-list.js';

function webhookBadge(w: Webhook): HTMLElement {
  if (!w.enabled) return h('span', { class: 'badge status expired', text: 'Disabled' });
  if (w.failing_since)
    return h('span', {
      class: 'badge status revoked',
      title: `Failing since ${exactTime(w.failing_since)}`,
      text: 'Failing',
    });
  return h('span', { class: 'badge status active', text: 'Enabled' });
}

async function toggleDeliveries(ctx: PageContext, hook: Webhook, button: HTMLElement): Promise<void> {
  const row = button.closest('tr')!;
  const existing = row.nextElementSibling?.classList.contains('details-row') ? row.nextElementSibling : null;
  if (existing) {
    existing.remove();
    button.setAttribute('aria-expanded', 'false');
    return;
  }
  const cell = h('td', { colspan: '4' }, h('div', { class: 'skeleton-chart', 'aria-hidden': 'true' }));
  row.after(h('tr', { class: 'details-row' }, cell));
  button.setAttribute('aria-expanded', 'true');
  try {
    const { deliveries } = await ctx.api.webhooks.deliveries(me(ctx).org_id, hook.id, { limit: 20 });
    cell.replaceChildren(
      deliveries.length
        ? dataTable(
            `Latest deliveries to ${hook.url}`,
            ['When', 'Event', 'Attempt', 'Result'],
            deliveries.map((d) =>
              h(
                'tr',
                {},
                h('td', {}, timeCell(d.created_at, '')),
                h('th', { scope: 'row' }, h('code', { text: d.event_type })),
                h('td', { text: String(d.attempt) }),
                h('td', {
                  text: `${d.status}${d.response_status ? ` (HTTP ${d.response_status})` : ''}${d.error ? `: ${d.error}` : ''}`,
                }),
              ),
            ),
          )
        : h('p', { class: 'muted', text: 'No deliveries yet.' }),
    );
    announce(`${deliveries.length} deliveries.`);
  } catch (err) {
    if (handledElsewhere(err)) return;
    const alert = h('div', { class: 'alert' });
    cell.replaceChildren(alert);
    showAlert(alert, err);
  }
}

function webhookRow(ctx: PageContext, w: Webhook): HTMLElement {
  return h(
    'tr',
    { 'data-webhook-id': w.id },
    h(
      'th',
      { scope: 'row', 'data-label': 'URL' },
      h('code', { class: 'masked-key', text: w.url }),
      w.description ? h('span', { class: 'hint block', text: w.description }) : null,
    ),
    h('td', { 'data-label': 'Events', text: w.event_types.length ? w.event_types.join(', ') : 'All events' }),
    h('td', { 'data-label': 'State' }, webhookBadge(w)),
    h(
      'td',
      { 'data-label': 'Deliveries', class: 'cell-actions' },
      h('button', {
        type: 'button',
        class: 'button ghost small',
        'aria-label': `Deliveries to ${w.url}`,
        text: 'Deliveries',
        'aria-expanded': 'false',
        onclick: (e: MouseEvent) => void toggleDeliveries(ctx, w, e.currentTarget as HTMLElement),
      }),
    ),
  );
}

export async function loadWebhooks(ctx: PageContext): Promise<boolean> {
  const next = await loadAdminList(ctx, {
    section: 'webhooks',
    error: 'webhooks-error',
    list: 'webhooks-list',
    emptyText: () => 'No webhook endpoints yet. Add one through the API to receive key and usage events.',
    fetch: () => ctx.api.webhooks.list(me(ctx).org_id),
    render: (data) => {
      const rows = data.webhooks.map((w) => webhookRow(ctx, w));
      byId('webhooks-list').replaceChildren(
        ...(rows.length
          ? [dataTable('Webhook endpoints', ['URL', 'Events', 'State', hiddenHeader('Deliveries')], rows)]
          : []),
      );
    },
  });
  return next !== false;
}
