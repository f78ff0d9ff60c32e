// A key's details: a list of small sections, each its own module. A new section (a chart, a
// field) is a module exporting a KeyDetailSection and one line in KEY_DETAIL_SECTIONS.
import type { PageContext } from '../../context.js';
import { h } from '../../dom.js';
import type { KeysPanel } from '../keys-panel.js';
import type { KeyRecord } from '../key-view.js';
import { controlsSection } from './controls.js';
import { factsSection } from './facts.js';
import { scopeUseSection } from './scope-use.js';
import { usageSection } from './usage.js';
import { verificationsSection } from './verifications.js';

export interface KeyDetailSection {
  /** Names the section's element (`data-detail-section`). */
  readonly name: string;
  /** The section for this key, from its record; null: nothing to show for it. */
  render(ctx: PageContext, panel: KeysPanel, key: KeyRecord): HTMLElement | null;
  /** What needs a request, each time the details open (the element is the one render returned). */
  load?(ctx: PageContext, key: KeyRecord, el: HTMLElement): Promise<void>;
}

/** In the order they show. */
export const KEY_DETAIL_SECTIONS: readonly KeyDetailSection[] = [
  factsSection,
  controlsSection,
  usageSection,
  verificationsSection,
  scopeUseSection,
];

export function detailsPanel(
  ctx: PageContext,
  panel: KeysPanel,
  key: KeyRecord,
  sections: readonly KeyDetailSection[] = KEY_DETAIL_SECTIONS,
): HTMLElement {
  const parts = sections.flatMap((section) => {
    const el = section.render(ctx, panel, key);
    if (!el) return [];
    el.dataset.detailSection = section.name;
    return [el];
  });
  return h('div', { class: 'details-panel' }, ...parts);
}

/** Runs each section's load over its element (the details just opened). */
export function loadDetails(
  ctx: PageContext,
  key: KeyRecord,
  panelEl: HTMLElement,
  sections: readonly KeyDetailSection[] = KEY_DETAIL_SECTIONS,
): void {
  for (const section of sections) {
    const el = panelEl.querySelector<HTMLElement>(`[data-detail-section="${section.name}"]`);
    if (el && section.load) void section.load(ctx, key, el);
  }
}
