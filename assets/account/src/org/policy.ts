// The org's key policy: owners change it, admins read it. The day ranges and the scopes that can
// need approval are the service's (its document), shown beside the fields.
import type { KeyPolicy, KeyPolicyRequest } from '../../../../packages/client/src/types.js';
import { me, type PageContext } from '../context.js';
import { byId, checkedValues, clearAlert, show, showAlert } from '../dom.js';
import { handledElsewhere } from '../errors.js';
import { describedScopes, scopeChecks } from '../keys/scopes.js';

type Scope = NonNullable<KeyPolicy['approval_required_for']>[number];

export class PolicyPanel {
  private policy: KeyPolicy | null = null;

  constructor(private readonly ctx: PageContext) {
    byId('policy-form').addEventListener('submit', (e) => void this.save(e));
  }

  /** The ranges the service accepts, as the fields' min/max and in their labels. */
  private describeFields(): void {
    for (const [input, field, empty] of [
      ['policy-lifetime', 'max_lifetime_days', 'no limit'],
      ['policy-stale', 'stale_after_days', 'never'],
    ] as const) {
      const { min, max } = this.ctx.doc.range('KeyPolicyRequest', field);
      const el = byId<HTMLInputElement>(input);
      if (min !== undefined) el.min = String(min);
      if (max !== undefined) el.max = String(max);
      const range = min !== undefined && max !== undefined ? `${min}–${max}; ` : '';
      byId(`${input}-range`).textContent = `(days, ${range}empty: ${empty})`;
    }
    const scopes = this.ctx.doc.choices('KeyPolicyRequest', 'approval_required_for');
    byId('policy-approvals').replaceChildren(...scopeChecks('policy-approve', describedScopes(this.ctx, scopes), ''));
    show(byId('policy-approvals-field'), scopes.length > 0);
  }

  async load(): Promise<boolean> {
    clearAlert(byId('policy-error'));
    this.describeFields();
    try {
      const policy = await this.ctx.api.orgs.keyPolicy(me(this.ctx).org_id);
      this.policy = policy;
      byId<HTMLInputElement>('policy-lifetime').value = String(policy.max_lifetime_days ?? '');
      byId<HTMLInputElement>('policy-stale').value = String(policy.stale_after_days ?? '');
      byId<HTMLInputElement>('policy-require-expiry').checked = policy.require_expiry;
      const held = policy.approval_required_for ?? [];
      for (const box of document.querySelectorAll<HTMLInputElement>('input[name="policy-approve"]'))
        box.checked = held.includes(box.value as Scope);
      // Advisory: the service refuses a PUT from anyone but an owner whatever the form allows.
      const owner = this.ctx.session.me?.org_role === 'owner';
      for (const el of byId('policy-form').querySelectorAll<HTMLInputElement | HTMLButtonElement>('input, button'))
        el.disabled = !owner;
      show(byId('policy-note'), !owner);
      this.ctx.sections.setAvailable('policy', true);
      return true;
    } catch (err) {
      if (!handledElsewhere(err)) this.ctx.sections.setAvailable('policy', false);
      return false;
    }
  }

  private async save(event: Event): Promise<void> {
    event.preventDefault();
    clearAlert(byId('policy-error'));
    byId('policy-status').textContent = '';
    const days = (id: string) => {
      const text = byId<HTMLInputElement>(id).value.trim();
      return text === '' ? null : Number(text);
    };
    const body: KeyPolicyRequest = {
      max_lifetime_days: days('policy-lifetime'),
      require_expiry: byId<HTMLInputElement>('policy-require-expiry').checked,
      stale_after_days: days('policy-stale'),
      // Not edited here: kept as they are.
      allowed_scopes_by_role: this.policy?.allowed_scopes_by_role ?? null,
      approval_required_for: checkedValues('policy-approve') as Scope[],
    };
    try {
      this.policy = await this.ctx.api.orgs.setKeyPolicy(me(this.ctx).org_id, body);
      byId('policy-status').textContent = 'Policy saved.';
      await Promise.all([this.ctx.panels.keys?.load(), this.ctx.panels.orgKeys?.load()]);
    } catch (err) {
      if (!handledElsewhere(err)) showAlert(byId('policy-error'), err);
    }
  }
}
