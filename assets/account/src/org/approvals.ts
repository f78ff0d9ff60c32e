// Pending approvals: the keys the org's key policy holds, each with Approve and Deny; the count
// shows on the section's menu entry.
import type { OrgApiKey } from '../../../../packages/client/src/types.js';
import { me, type PageContext } from '../context.js';
import { announce, byId, clearAlert, dataTable, h, show, showAlert } from '../dom.js';
import { handledElsewhere } from '../errors.js';
import { keyName } from '../keys/key-view.js';
import { hiddenHeader, loadAdminList } from './admin-list.js';

export class ApprovalsPanel {
  constructor(private readonly ctx: PageContext) {}

  async load(): Promise<boolean> {
    const next = await loadAdminList(this.ctx, {
      section: 'approvals',
      error: 'approvals-error',
      list: 'approvals-list',
      emptyText: () => 'No keys are waiting for approval.',
      fetch: () => this.ctx.api.orgs.keys(me(this.ctx).org_id, { state: 'pending', limit: 100 }),
      render: (data) => this.render(data.keys),
    });
    return next !== false;
  }

  private render(keys: OrgApiKey[]): void {
    const count = byId('approvals-count');
    count.textContent = String(keys.length);
    count.setAttribute('aria-label', `${keys.length} waiting`);
    show(count, keys.length > 0);
    const rows = keys.map((key) => {
      const owner = key.owner_email ?? this.ctx.session.members.get(key.user_id) ?? key.user_id;
      const decide = (what: 'approve' | 'deny') => (e: MouseEvent) =>
        void this.decide(key, what, e.currentTarget as HTMLButtonElement);
      return h(
        'tr',
        { 'data-pending-key-id': key.id },
        h('th', { scope: 'row', 'data-label': 'Name' }, h('span', { class: 'name-text', text: keyName(key) })),
        h('td', { 'data-label': 'Minted by', text: owner }),
        h('td', { 'data-label': 'Scopes', text: key.scopes.join(', ') }),
        h(
          'td',
          { 'data-label': 'Actions', class: 'cell-actions' },
          h('button', {
            type: 'button',
            class: 'button primary small',
            'aria-label': `Approve ${keyName(key)} (minted by ${owner})`,
            text: 'Approve',
            onclick: decide('approve'),
          }),
          h('button', {
            type: 'button',
            class: 'button danger small',
            'aria-label': `Deny ${keyName(key)} (minted by ${owner})`,
            text: 'Deny',
            onclick: decide('deny'),
          }),
        ),
      );
    });
    byId('approvals-list').replaceChildren(
      ...(rows.length
        ? [dataTable('Keys waiting for approval', ['Name', 'Minted by', 'Scopes', hiddenHeader('Actions')], rows)]
        : []),
    );
  }

  private async decide(key: OrgApiKey, what: 'approve' | 'deny', button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    clearAlert(byId('approvals-error'));
    const orgId = me(this.ctx).org_id;
    try {
      if (what === 'approve') await this.ctx.api.orgs.approveKey(orgId, key.id);
      else await this.ctx.api.orgs.denyKey(orgId, key.id);
      announce(what === 'approve' ? `${keyName(key)} approved.` : `${keyName(key)} denied.`);
    } catch (err) {
      if (!handledElsewhere(err)) showAlert(byId('approvals-error'), err);
    }
    button.disabled = false;
    await Promise.all([this.load(), this.ctx.panels.orgKeys?.load()]);
    byId('approvals-title').focus();
  }
}
