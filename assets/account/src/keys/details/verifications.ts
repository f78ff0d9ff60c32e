// What the key's requests were decided, by outcome (GET /api-keys/{id}/verifications), where the route exists.
import { h } from '../../dom.js';
import { loadVerifications } from '../../usage/verifications.js';
import { keyName } from '../key-view.js';
import type { KeyDetailSection } from './details.js';

export const verificationsSection: KeyDetailSection = {
  name: 'verifications',
  render: (ctx, _panel, key) =>
    ctx.doc.hasRoute('get', '/api-keys/{keyID}/verifications')
      ? h('div', { class: 'key-verifications', 'data-verifications-for': key.id })
      : null,
  load: (ctx, key, slot) =>
    loadVerifications(
      {
        id: `verifications-${key.id}`,
        subject: keyName(key),
        fetch: (query) => ctx.api.keys.verifications(key.id, query),
      },
      slot,
    ),
};
