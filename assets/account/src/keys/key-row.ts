// One key of the caller's list: its row (name, masked key, scopes, state, last use, creation,
// actions) and, below it, its details (details/).
import type { PageContext } from '../context.js';
import { h } from '../dom.js';
import { timeCell } from '../time.js';
import { detailsPanel, loadDetails } from './details/details.js';
import { openRevoke, openRotate } from './key-dialogs.js';
import type { KeysPanel } from './keys-panel.js';
import { isUsable, keyBadge, keyName, maskedKey, stateOf, type KeyRecord } from './key-view.js';
import { adminLabel, ownerNote, setByAdmin } from './set-by.js';

const WRITE_SCOPE = /:write$/;

export function keyRows(ctx: PageContext, panel: KeysPanel, key: KeyRecord, now: number): HTMLElement[] {
  const state = stateOf(key);
  const badge = keyBadge(key, now);
  const name = keyName(key);
  const open = panel.openDetails.has(key.id);
  const detailsId = `details-${key.id}`;
  const button = (label: string, cls: string, text: string, onclick: (e: MouseEvent) => void) =>
    h('button', { type: 'button', class: `button ${cls} small`, 'aria-label': label, text, onclick });
  const actions = [
    h('button', {
      type: 'button',
      class: 'button ghost small',
      'aria-expanded': String(open),
      'aria-controls': detailsId,
      'aria-label': `Details of ${name}`,
      text: 'Details',
      onclick: () => toggleDetails(ctx, panel, key.id),
    }),
  ];
  if (state === 'active' && ctx.doc.hasRoute('post', '/api-keys/{keyID}/rotate'))
    actions.push(button(`Rotate ${name}`, 'secondary', 'Rotate', (e) => openRotate(ctx, key, e.currentTarget)));
  // An admin disabled it: the owner's PATCH may not enable it (403), so the button stays, disabled, with why.
  const adminDisabled = state === 'disabled' && setByAdmin(key, 'enabled');
  const noteId = `enable-note-${key.id}`;
  if (isUsable(state) && ctx.doc.hasRoute('patch', '/api-keys/{keyID}')) {
    const enable = state === 'disabled';
    const toggle = button(
      `${enable ? 'Enable' : 'Disable'} ${name}`,
      enable ? 'primary' : 'secondary',
      enable ? 'Enable' : 'Disable',
      () =>
        void panel.update(
          key,
          { enabled: enable },
          enable ? `Key ${name} enabled.` : `Key ${name} disabled: it is refused until enabled again.`,
        ),
    );
    if (adminDisabled) {
      toggle.disabled = true;
      toggle.setAttribute('aria-describedby', noteId);
    }
    actions.push(toggle);
  }
  if (state !== 'revoked')
    actions.push(button(`Revoke ${name}`, 'danger', 'Revoke', (e) => openRevoke(ctx, key, e.currentTarget)));
  const row = h(
    'tr',
    { class: state === 'active' ? 'key-row' : 'key-row muted-row', 'data-key-id': key.id, 'data-status': state },
    h(
      'th',
      { scope: 'row', 'data-label': 'Name', tabindex: '-1', class: key.name ? 'key-name' : 'key-name untitled' },
      h('span', { class: 'name-text', text: name }),
    ),
    h(
      'td',
      { 'data-label': 'Key' },
      h('code', { class: 'masked-key', title: 'The full key is never shown again', text: maskedKey(key) }),
    ),
    h(
      'td',
      { 'data-label': 'Scopes' },
      h(
        'span',
        { class: 'badges' },
        ...key.scopes.map((s) =>
          h('span', { class: `badge scope ${WRITE_SCOPE.test(s) ? 'write' : 'read'}`, text: s }),
        ),
      ),
    ),
    h(
      'td',
      { 'data-label': 'Status', class: 'cell-status' },
      h('span', { class: `badge status ${badge.variant}`, title: badge.title, text: badge.text }),
      ...(adminDisabled
        ? [' ', adminLabel(), h('span', { class: 'hint block', id: noteId, text: ownerNote('enabled') })]
        : []),
    ),
    h('td', { 'data-label': 'Last used', class: 'cell-last-used' }, timeCell(key.last_used_at, 'Never')),
    h('td', { 'data-label': 'Created', class: 'cell-created' }, timeCell(key.created_at, '')),
    h('td', { 'data-label': 'Actions', class: 'cell-actions' }, h('span', { class: 'actions' }, ...actions)),
  );
  const panelEl = detailsPanel(ctx, panel, key);
  const details = h('tr', { class: 'details-row', id: detailsId, hidden: !open }, h('td', { colspan: '7' }, panelEl));
  if (open) loadDetails(ctx, key, panelEl);
  return [row, details];
}

function toggleDetails(ctx: PageContext, panel: KeysPanel, id: string): void {
  if (panel.openDetails.has(id)) panel.openDetails.delete(id);
  else panel.openDetails.add(id);
  const open = panel.openDetails.has(id);
  const row = document.getElementById(`details-${id}`);
  document
    .querySelector(`tr[data-key-id="${CSS.escape(id)}"] [aria-controls="details-${CSS.escape(id)}"]`)
    ?.setAttribute('aria-expanded', String(open));
  if (!row) return;
  row.hidden = !open;
  const key = panel.find(id);
  const details = row.querySelector<HTMLElement>('.details-panel');
  if (open && key && details) loadDetails(ctx, key, details);
}
