import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keyRecord, loadPage, testContext } from '../../test/page.js';
import type { KeysPanel } from '../keys-panel.js';
import type { KeyRecord } from '../key-view.js';
import { controlsSection } from './controls.js';

const key = (over: Partial<KeyRecord> = {}): KeyRecord =>
  keyRecord({
    state: 'active',
    // As the answer carries it: the generated type of a record's windows is Record<string, never>[].
    rate_limits: JSON.parse('[{"name":"default","limit":100,"window_seconds":1}]') as KeyRecord['rate_limits'],
    credits: { remaining: 40 },
    allowed_cidrs: ['10.0.0.0/8'],
    metadata: { team: 'a' },
    ...over,
  });
const doc = { paths: { '/api-keys/{keyID}': { patch: {} } } };

function render(record: KeyRecord, update = vi.fn(async () => true)) {
  const panel = { update } as Partial<KeysPanel> as KeysPanel;
  const el = controlsSection.render(testContext({ doc }), panel, record)!;
  document.body.append(el);
  return el;
}
/** Each fact's term and whether it carries the label. */
const labelled = (el: HTMLElement) =>
  Object.fromEntries(
    [...el.querySelectorAll('.control-facts > div')].map((d) => [
      d.querySelector('dt')!.textContent,
      d.querySelector('dd .badge.set-by')?.textContent ?? null,
    ]),
  );
const field = (el: HTMLElement, name: string) => el.querySelector<HTMLTextAreaElement>(`#ctl-${name}-${key().id}`)!;
const description = (el: HTMLElement, name: string) =>
  field(el, name)
    .getAttribute('aria-describedby')!
    .split(' ')
    .map((id) => document.getElementById(id)!.textContent)
    .join(' | ');

describe('a key’s controls', () => {
  beforeEach(loadPage);

  it('label each control an admin set "set by an admin", and no other', () => {
    const el = render(key({ controls_set_by: { rate_limits: 'admin', credits: 'owner', metadata: 'admin' } }));
    expect(labelled(el)).toEqual({
      'Rate limits': 'set by an admin',
      Credits: null,
      'Allowed networks': null,
      Metadata: 'set by an admin',
    });
    expect(labelled(render(key({ controls_set_by: undefined })))).toEqual({
      'Rate limits': null,
      Credits: null,
      'Allowed networks': null,
      Metadata: null,
    });
  });

  it('tell the owner, at each field an admin set, that they may tighten it but not lift it', () => {
    const el = render(key({ controls_set_by: { rate_limits: 'admin', allowed_cidrs: 'owner' } }));
    expect(description(el, 'rate_limits')).toBe(
      'set by an admin You may tighten it, but not lift it. | e.g. [{"name":"default","limit":10,"window_seconds":1}]; empty: the plan default.',
    );
    expect(description(el, 'allowed_cidrs')).toBe('e.g. 203.0.113.0/24; empty: anywhere.');
    expect(field(el, 'rate_limits').readOnly).toBe(false);
  });

  it('keep metadata an admin set read-only, since no change of it is narrower', () => {
    const el = render(key({ controls_set_by: { metadata: 'admin' } }));
    expect(field(el, 'metadata').readOnly).toBe(true);
    expect(description(el, 'metadata')).toMatch(/^set by an admin Only an org owner or admin can change it\. \| /);
    expect(field(render(key({ controls_set_by: { metadata: 'owner' } })), 'metadata').readOnly).toBe(false);
  });

  it('send only the controls changed in the form, so an admin’s credits are not sent back at an old balance', () => {
    const update = vi.fn(async () => true);
    const record = key({ controls_set_by: { credits: 'admin', rate_limits: 'admin' } });
    const el = render(record, update);
    const save = el.querySelector<HTMLButtonElement>('button[type="submit"]')!;
    save.click();
    expect(update).not.toHaveBeenCalled();
    expect(el.querySelector('.alert')!.textContent).toBe('Nothing to save: no control was changed.');

    field(el, 'rate_limits').value = '[{"name":"default","limit":50,"window_seconds":1}]';
    field(el, 'allowed_cidrs').value = '10.1.0.0/16\n';
    save.click();
    expect(update).toHaveBeenCalledWith(
      record,
      { rate_limits: [{ name: 'default', limit: 50, window_seconds: 1 }], allowed_cidrs: ['10.1.0.0/16'] },
      'Controls of partner saved.',
      el.querySelector('.alert'),
    );
  });
});
