import { beforeEach, describe, expect, it, vi } from 'vitest';
import { h } from '../../dom.js';
import { loadPage, testContext } from '../../test/page.js';
import type { KeysPanel } from '../keys-panel.js';
import type { KeyRecord } from '../key-view.js';
import { detailsPanel, KEY_DETAIL_SECTIONS, loadDetails, type KeyDetailSection } from './details.js';

const key: KeyRecord = {
  id: '11111111-2222-4333-8444-555555555555',
  org_id: 'o1',
  name: 'ci',
  lookup: 'AbCdEfGhIjKl',
  last4: 'Zz9Q',
  scopes: ['decisions:read'],
  created_at: '2026-11-01T00:00:00Z',
  state: 'active',
};
const panel = {} as KeysPanel;

describe('a key’s details', () => {
  beforeEach(loadPage);

  it('are its sections in order: facts, controls, usage, verifications, scopes (each where the deployment has its route)', () => {
    const el = detailsPanel(testContext(), panel, key);
    expect([...el.children].map((c) => (c as HTMLElement).dataset.detailSection)).toEqual([
      'facts',
      'controls',
      'usage',
    ]);
    expect(el.querySelector('[data-detail-section="facts"]')!.textContent).toContain(key.id);
    // No PATCH route in the document: the controls are facts only, no form; no scope-usage route: no scopes.
    expect(el.querySelector('form')).toBeNull();
    expect(KEY_DETAIL_SECTIONS.map((s) => s.name)).toEqual(['facts', 'controls', 'usage', 'verifications', 'scopes']);
  });

  it('take a new section as one more entry, rendered from the record and loaded when the details open', async () => {
    const load = vi.fn(async (_ctx: unknown, k: KeyRecord, el: HTMLElement) => {
      el.textContent = `loaded ${k.name}`;
    });
    const description: KeyDetailSection = {
      name: 'description',
      render: (_ctx, _panel, k) => h('p', { text: k.name }),
      load,
    };
    const sections = [...KEY_DETAIL_SECTIONS.filter((s) => s.name === 'facts'), description];
    const ctx = testContext();
    const el = detailsPanel(ctx, panel, key, sections);
    expect(el.querySelector('[data-detail-section="description"]')!.textContent).toBe('ci');
    loadDetails(ctx, key, el, sections);
    await vi.waitFor(() => expect(load).toHaveBeenCalledOnce());
    expect(el.querySelector('[data-detail-section="description"]')!.textContent).toBe('loaded ci');
  });
});
