// The key's controls: what applies now (rate limits, credits, networks, metadata), each an admin
// set labelled so, and a form to change them (JSON, checked by the server: its 400 or 403 shows
// beside the form) that sends the controls changed in it.
import type { UpdateKeyRequest } from '../../../../../packages/client/src/types.js';
import { clearAlert, h, showAlert } from '../../dom.js';
import { PageError } from '../../errors.js';
import { exactTime } from '../../time.js';
import { keyName, stateOf, type KeyRecord } from '../key-view.js';
import { adminLabel, ownerNote, setByAdmin, type ControlName } from '../set-by.js';
import type { KeyDetailSection } from './details.js';

const pretty = (value: unknown) => (value === undefined || value === null ? '' : JSON.stringify(value, null, 2));
const FIELDS = ['rate_limits', 'credits', 'allowed_cidrs', 'metadata'] as const satisfies readonly ControlName[];

function facts(key: KeyRecord): HTMLElement {
  const fact = (control: ControlName, term: string, dd: HTMLElement) => {
    if (setByAdmin(key, control)) dd.append(' ', adminLabel());
    return h('div', {}, h('dt', { text: term }), dd);
  };
  const credits = key.credits;
  const windows = key.rate_limits;
  return h(
    'dl',
    { class: 'control-facts' },
    fact(
      'rate_limits',
      'Rate limits',
      h('dd', {
        text: windows
          ? windows.map((w) => `${w.name}: ${w.limit} per ${w.window_seconds} s`).join('; ')
          : 'Plan default',
      }),
    ),
    fact(
      'credits',
      'Credits',
      h('dd', {
        'data-credits': '',
        text: credits
          ? `${credits.remaining} left${credits.next_refill_at && credits.refill ? `, refill to ${credits.refill.amount} ${exactTime(credits.next_refill_at)}` : ''}`
          : 'Unlimited',
      }),
    ),
    fact(
      'allowed_cidrs',
      'Allowed networks',
      h('dd', { text: key.allowed_cidrs ? key.allowed_cidrs.join(', ') : 'Anywhere' }),
    ),
    key.metadata ? fact('metadata', 'Metadata', h('dd', {}, h('code', { text: JSON.stringify(key.metadata) }))) : null,
  );
}

export const controlsSection: KeyDetailSection = {
  name: 'controls',
  render(ctx, panel, key) {
    const shown = facts(key);
    if (stateOf(key) === 'revoked' || !ctx.doc.hasRoute('patch', '/api-keys/{keyID}')) return shown;
    const credits = key.credits;
    const id = (field: string) => `ctl-${field}-${key.id}`;
    // A control an admin set: the owner reads what they may do with it; metadata they may not change at all.
    const area = (field: (typeof FIELDS)[number], label: string, value: string, hint: string) => {
      const admin = setByAdmin(key, field);
      const note = `${id(field)}-set-by`;
      return h(
        'div',
        { class: 'field' },
        h('label', { for: id(field), text: label }),
        h(
          'textarea',
          {
            id: id(field),
            rows: '3',
            spellcheck: 'false',
            readonly: admin && field === 'metadata',
            'aria-describedby': admin ? `${note} ${id(field)}-hint` : `${id(field)}-hint`,
          },
          value,
        ),
        admin ? h('p', { class: 'hint set-by-note', id: note }, adminLabel(), ' ', ownerNote(field)) : null,
        h('p', { class: 'hint', id: `${id(field)}-hint`, text: hint }),
      );
    };
    const alert = h('div', { class: 'alert', hidden: true, role: 'alert' });
    const form = h(
      'form',
      { class: 'controls-form', 'aria-label': `Controls of ${keyName(key)}` },
      area(
        'rate_limits',
        'Rate limits (JSON)',
        pretty(key.rate_limits),
        'e.g. [{"name":"default","limit":10,"window_seconds":1}]; empty: the plan default.',
      ),
      area(
        'credits',
        'Credits (JSON)',
        credits ? pretty({ remaining: credits.remaining, ...(credits.refill ? { refill: credits.refill } : {}) }) : '',
        'e.g. {"remaining":1000,"refill":{"amount":1000,"interval":"monthly"}}; empty: unlimited.',
      ),
      area(
        'allowed_cidrs',
        'Allowed networks (one CIDR a line)',
        (key.allowed_cidrs ?? []).join('\n'),
        'e.g. 203.0.113.0/24; empty: anywhere.',
      ),
      area(
        'metadata',
        'Metadata (JSON object)',
        pretty(key.metadata),
        'Given to your services with each request; empty: none.',
      ),
      alert,
      h('button', { type: 'submit', class: 'button primary small', text: 'Save controls' }),
    );
    const value = (field: string) => form.querySelector<HTMLTextAreaElement>(`#${CSS.escape(id(field))}`)!.value.trim();
    // Only what was changed is sent: an admin's control sent back as the page loaded it may be a lift
    // by then (credits spent since, while the form still holds the old balance).
    const loaded = Object.fromEntries(FIELDS.map((field) => [field, value(field)]));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      clearAlert(alert);
      const changed = FIELDS.filter((field) => value(field) !== loaded[field]);
      if (changed.length === 0) {
        showAlert(alert, new PageError(400, 'Nothing to save: no control was changed.'));
        return;
      }
      const body: Record<string, unknown> = {};
      for (const field of changed) {
        if (field === 'allowed_cidrs') {
          const cidrs = value(field)
            .split('\n')
            .map((s) => s.trim())
            .filter(Boolean);
          body[field] = cidrs.length > 0 ? cidrs : null;
          continue;
        }
        try {
          body[field] = value(field) === '' ? null : JSON.parse(value(field));
        } catch {
          showAlert(alert, new PageError(400, `${field} is not valid JSON`));
          return;
        }
      }
      void panel.update(key, body as UpdateKeyRequest, `Controls of ${keyName(key)} saved.`, alert);
    });
    return h('div', { class: 'key-controls' }, h('p', { class: 'facts-title', text: 'Controls' }), shown, form);
  },
};
