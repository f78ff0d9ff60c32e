// Who set each of a key's controls, as the record says (`controls_set_by`): the "set by an admin"
// label and what the page tells the key's owner about such a control. The rules themselves are the
// server's (docs/key-controls.md, "Who set a control"); the page only reads the field.
import type { KeyControlsSetBy } from '../../../../packages/client/src/types.js';
import { h } from '../dom.js';

export type ControlName = keyof KeyControlsSetBy;

/** The record's part this needs: any key list's record carries it. */
type WithSetBy = { controls_set_by?: KeyControlsSetBy };

/** The controls as the page names them, in the order it shows them. */
export const CONTROL_LABELS: Readonly<Record<ControlName, string>> = {
  enabled: 'Disabled',
  rate_limits: 'Rate limits',
  credits: 'Credits',
  allowed_cidrs: 'Allowed networks',
  metadata: 'Metadata',
};

export const setByAdmin = (key: WithSetBy, control: ControlName): boolean => key.controls_set_by?.[control] === 'admin';

/** The controls an org owner or admin (or the operator) set, in the page's order. */
export const adminControls = (key: WithSetBy): ControlName[] =>
  (Object.keys(CONTROL_LABELS) as ControlName[]).filter((c) => setByAdmin(key, c));

/** The small label beside a control an admin set: words, so it does not rest on colour. */
export const adminLabel = (): HTMLElement => h('span', { class: 'badge set-by', text: 'set by an admin' });

/** What the key's owner may do with a control an admin set (shown after the label; metadata cannot be narrowed). */
export function ownerNote(control: ControlName): string {
  if (control === 'enabled') return 'Only an org owner or admin can enable it again.';
  if (control === 'metadata') return 'Only an org owner or admin can change it.';
  return 'You may tighten it, but not lift it.';
}
