// The key's facts: its id, creation, expiry and rotation grace.
import { h } from '../../dom.js';
import { timeCell } from '../../time.js';
import type { KeyDetailSection } from './details.js';

const fact = (term: string, value: Node) => h('div', {}, h('dt', { text: term }), h('dd', {}, value));

export const factsSection: KeyDetailSection = {
  name: 'facts',
  render: (_ctx, _panel, key) =>
    h(
      'dl',
      { class: 'facts' },
      fact('Key ID', h('code', { text: key.id })),
      fact('Created', timeCell(key.created_at, '')),
      fact('Expires', timeCell(key.expires_at, 'Never')),
      key.previous_secret_expires_at
        ? fact('Previous secret works until', timeCell(key.previous_secret_expires_at, ''))
        : null,
    ),
};
