// The key's requests over the last 30 days (GET /api-keys/{id}/usage), charted, where the route exists.
import { h, showAlert } from '../../dom.js';
import { handledElsewhere, isMissingRoute } from '../../errors.js';
import { chart, seriesOf, totalOf } from '../../usage/chart.js';
import { keyName } from '../key-view.js';
import type { KeyDetailSection } from './details.js';

export const usageSection: KeyDetailSection = {
  name: 'usage',
  render: (_ctx, _panel, key) => h('div', { class: 'key-usage', 'data-usage-for': key.id }),
  async load(ctx, key, slot) {
    slot.replaceChildren(h('div', { class: 'skeleton-chart', 'aria-hidden': 'true' }));
    try {
      const data = await ctx.api.keys.usage(key.id);
      slot.replaceChildren(
        h('p', { class: 'facts-title', text: 'Usage charged with this key' }),
        chart(
          `Units charged with ${keyName(key)} per day (queries, imports and captures), last 30 days`,
          seriesOf(data.days, totalOf),
          `key-${key.id}`,
        ),
      );
    } catch (err) {
      if (handledElsewhere(err)) return;
      if (isMissingRoute(err))
        slot.replaceChildren(h('p', { class: 'muted', text: 'Usage per key is not available on this deployment.' }));
      else {
        const alert = h('div', { class: 'alert' });
        slot.replaceChildren(alert);
        showAlert(alert, err, () => void usageSection.load?.(ctx, key, slot));
      }
    }
  },
};
