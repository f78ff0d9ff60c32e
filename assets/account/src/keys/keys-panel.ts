// The caller's own keys: the list (active and disabled first, the others collapsed), "Load more",
// and the row of each key with its actions and details.
import type { UpdateKeyRequest } from '../../../../packages/client/src/types.js';
import { me, refreshOrgPanels, type PageContext } from '../context.js';
import { announce, byId, clearAlert, show, showAlert } from '../dom.js';
import { describeError, errorStatus, handledElsewhere } from '../errors.js';
import { keyRows } from './key-row.js';
import { isUsable, stateOf, type KeyRecord } from './key-view.js';

export const PAGE_SIZE = 50;

export class KeysPanel {
  private keys: KeyRecord[] = [];
  private cursor: string | null = null;
  private showInactive = false;
  /** Keys whose details are open (they stay open across re-renders). */
  readonly openDetails = new Set<string>();
  /** False once the deployment answered 501: it has no API keys at all. */
  enabled = true;

  /** The panel's elements in the page's markup, looked up once. */
  private readonly el = {
    section: byId('keys'),
    error: byId('keys-error'),
    skeleton: byId('keys-skeleton'),
    table: byId('keys-table'),
    empty: byId('keys-empty'),
    body: byId('keys-body'),
    inactive: byId('keys-inactive'),
    toggle: byId('inactive-toggle'),
    more: byId<HTMLButtonElement>('keys-more'),
    create: byId('create-open'),
    banner: byId('banner'),
  };

  constructor(private readonly ctx: PageContext) {
    this.el.toggle.addEventListener('click', () => this.toggleInactive());
    this.el.more.addEventListener('click', () => void this.load({ more: true }));
  }

  async load({ more = false } = {}): Promise<void> {
    clearAlert(this.el.error);
    const section = this.el.section;
    if (!more) {
      section.setAttribute('aria-busy', 'true');
      if (this.keys.length === 0) show(this.el.skeleton, true);
    }
    const moreButton = this.el.more;
    moreButton.disabled = true;
    try {
      const data = await this.ctx.api.keys.list({
        org_id: me(this.ctx).org_id,
        limit: PAGE_SIZE,
        ...(more && this.cursor ? { cursor: this.cursor } : {}),
      });
      const page = data.keys as KeyRecord[];
      this.keys = more ? [...this.keys, ...page.filter((k) => !this.keys.some((s) => s.id === k.id))] : page;
      this.cursor = data.next_cursor ?? null;
      this.setEnabled(true);
      this.render();
      if (more) {
        announce(`${page.length} more ${page.length === 1 ? 'key' : 'keys'} loaded.`);
        // The button may be gone now: focus goes to the first key that arrived.
        const first = page.find((k) => stateOf(k) === 'active');
        if (first) this.focusRow(first.id);
      }
    } catch (err) {
      if (handledElsewhere(err)) return;
      if (errorStatus(err) === 501) this.setEnabled(false, err);
      else {
        if (!more) {
          show(this.el.table, false);
          show(this.el.empty, false);
        }
        showAlert(this.el.error, err, () => void this.load({ more }));
      }
    } finally {
      show(this.el.skeleton, false);
      section.setAttribute('aria-busy', 'false');
      moreButton.disabled = false;
    }
  }

  /** 501: this deployment has no API keys at all; say so once, at the top, and keep only usage. */
  setEnabled(enabled: boolean, err?: unknown): void {
    this.enabled = enabled;
    show(this.el.create, enabled && this.ctx.sections.current === 'keys');
    show(this.el.section, enabled);
    const banner = this.el.banner;
    if (!enabled) showAlert(banner, err);
    else if (banner.dataset.status === '501') clearAlert(banner);
  }

  reset(): void {
    this.keys = [];
    this.cursor = null;
    this.showInactive = false;
    this.openDetails.clear();
    this.el.body.replaceChildren();
    this.el.inactive.replaceChildren();
    clearAlert(this.el.error);
    this.setEnabled(true);
  }

  find(id: string): KeyRecord | undefined {
    return this.keys.find((k) => k.id === id);
  }

  /** A key the service just answered with (minted, rotated, updated): first in the list, or in its place. */
  put(record: KeyRecord): void {
    const known = this.keys.some((k) => k.id === record.id);
    this.keys = known ? this.keys.map((k) => (k.id === record.id ? record : k)) : [record, ...this.keys];
    this.render();
  }

  /** After a revoke: the list as the service now has it, with the inactive keys open so focus can land on it. */
  async afterRevoke(id: string): Promise<void> {
    this.showInactive = true;
    await this.load();
    this.focusRow(id);
  }

  render(): void {
    const now = Date.now();
    const active = this.keys.filter((k) => isUsable(stateOf(k)));
    const inactive = this.keys.filter((k) => !isUsable(stateOf(k)));
    this.el.body.replaceChildren(...active.flatMap((key) => keyRows(this.ctx, this, key, now)));
    this.el.inactive.replaceChildren(...inactive.flatMap((key) => keyRows(this.ctx, this, key, now)));
    show(this.el.inactive, this.showInactive && inactive.length > 0);
    show(this.el.table, active.length > 0 || (this.showInactive && inactive.length > 0));
    show(this.el.empty, active.length === 0);
    const toggle = this.el.toggle;
    toggle.textContent = `${this.showInactive ? 'Hide' : 'Show'} ${inactive.length} inactive ${inactive.length === 1 ? 'key' : 'keys'}`;
    toggle.setAttribute('aria-expanded', String(this.showInactive));
    show(toggle, inactive.length > 0);
    show(this.el.more, Boolean(this.cursor));
  }

  private toggleInactive(): void {
    this.showInactive = !this.showInactive;
    this.render();
    const count = this.keys.filter((k) => !isUsable(stateOf(k))).length;
    announce(this.showInactive ? `Showing ${count} inactive keys.` : 'Inactive keys hidden.');
  }

  focusRow(id: string): void {
    const cell = document.querySelector<HTMLElement>(
      `tr[data-key-id="${CSS.escape(id)}"] th, tr[data-service-key-id="${CSS.escape(id)}"] th`,
    );
    if (cell && cell.getClientRects().length > 0) cell.focus();
    else byId('app-title').focus();
  }

  /** PATCH the key; the record that comes back replaces its row. False on a refusal (shown in `alertEl`, or spoken). */
  async update(key: KeyRecord, body: UpdateKeyRequest, done: string, alertEl: HTMLElement | null = null) {
    try {
      this.put((await this.ctx.api.keys.update(key.id, body)) as KeyRecord);
      this.focusRow(key.id);
      announce(done);
      void refreshOrgPanels(this.ctx);
      return true;
    } catch (err) {
      if (handledElsewhere(err)) return false;
      if (alertEl) showAlert(alertEl, err);
      else {
        const { title, detail } = describeError(err);
        announce(`${title} ${detail}`.trim(), { error: true });
      }
      return false;
    }
  }

  /** Refreshes what goes stale while the page stays open: relative times (not while a row or dialog is in use). */
  refreshTimes(): void {
    const busy =
      [...document.querySelectorAll('dialog')].some((d) => d.open) || this.el.table.contains(document.activeElement);
    if (!busy && this.el.error.hidden) this.render();
  }
}
