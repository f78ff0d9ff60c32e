// Every key in the organisation with who minted it, for owners and admins (revoke included).
import type { OrgApiKeyList, OrgApiKey } from '../../../../packages/client/src/types.js';
import { me, type PageContext } from '../context.js';
import { dataTable, h } from '../dom.js';
import { openRevoke } from '../keys/key-dialogs.js';
import { keyBadge, keyName, maskedKey, stateOf } from '../keys/key-view.js';
import { PAGE_SIZE } from '../keys/keys-panel.js';
import { timeCell } from '../time.js';
import { hiddenHeader, PagedList, putRows } from './admin-list.js';

export function orgKeyRow(ctx: PageContext, key: OrgApiKey): HTMLElement {
  const badge = keyBadge(key);
  const email = key.owner_email ?? ctx.session.members.get(key.user_id) ?? key.user_id;
  const owner = key.owner_status === 'removed' ? `${email} (no longer a member)` : email;
  return h(
    'tr',
    { 'data-org-key-id': key.id, 'data-status': stateOf(key) },
    h('th', { scope: 'row', 'data-label': 'Name' }, h('span', { class: 'name-text', text: keyName(key) })),
    h('td', { 'data-label': 'Minted by', text: owner }),
    h('td', { 'data-label': 'Key' }, h('code', { class: 'masked-key', text: maskedKey(key) })),
    h(
      'td',
      { 'data-label': 'Status' },
      h('span', { class: `badge status ${badge.variant}`, title: badge.title, text: badge.text }),
    ),
    h('td', { 'data-label': 'Last used' }, timeCell(key.last_used_at, 'Never')),
    h(
      'td',
      { 'data-label': 'Actions', class: 'cell-actions' },
      stateOf(key) === 'revoked'
        ? null
        : h('button', {
            type: 'button',
            class: 'button danger small',
            'aria-label': `Revoke ${keyName(key)} (minted by ${owner})`,
            text: 'Revoke',
            onclick: (e: MouseEvent) => openRevoke(ctx, key, e.currentTarget, 'org'),
          }),
    ),
  );
}

export const orgKeysList = (ctx: PageContext) =>
  new PagedList<OrgApiKeyList>(ctx, (cursor, append) => ({
    section: 'org-keys',
    error: 'org-keys-error',
    list: 'org-keys-list',
    more: 'org-keys-more',
    emptyText: () => 'No keys in this organisation yet.',
    fetch: () => ctx.api.orgs.keys(me(ctx).org_id, { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) }),
    render: (data) =>
      putRows(
        'org-keys-list',
        append,
        data.keys.map((key) => orgKeyRow(ctx, key)),
        (rows) =>
          dataTable(
            'Every key in this organisation',
            ['Name', 'Minted by', 'Key', 'Status', 'Last used', hiddenHeader('Actions')],
            rows,
          ),
      ),
  }));
