import { beforeEach, describe, expect, it } from 'vitest';
import { Sections, sectionOf } from './sections.js';
import { loadPage } from './test/page.js';

const visible = () =>
  [...document.querySelectorAll<HTMLElement>('[data-section-panel]')]
    .filter((el) => !el.hidden)
    .map((el) => el.dataset.sectionPanel);

describe('the sections of the page and their menu', () => {
  beforeEach(loadPage);

  it('reads the section from the URL fragment, and nothing else (the skip link’s #main)', () => {
    expect(sectionOf('#audit')).toBe('audit');
    expect(sectionOf('#service-keys')).toBe('service-keys');
    expect(sectionOf('#main')).toBeNull();
    expect(sectionOf('')).toBeNull();
  });

  it('shows the keys until the section the URL names is available, then that one only, marked in the menu', () => {
    const sections = new Sections(document);
    sections.follow('#audit');
    expect(visible()).toEqual(['keys']);
    expect(document.querySelector('a[href="#audit"]')!.hasAttribute('hidden')).toBe(true);
    expect(document.getElementById('org-admin')!.hidden).toBe(true);

    sections.setAvailable('audit', true);
    expect(visible()).toEqual(['audit']);
    expect(document.querySelector('a[href="#audit"]')!.getAttribute('aria-current')).toBe('page');
    expect(document.querySelector('a[href="#keys"]')!.hasAttribute('aria-current')).toBe(false);
    expect(document.getElementById('org-admin')!.hidden).toBe(false);
    expect(document.title).toBe('Audit log · API keys and usage');

    // The skip link changes the fragment to #main: the section stays.
    sections.follow('#main');
    expect(visible()).toEqual(['audit']);
    // Back to a URL without a fragment: the keys.
    sections.follow('');
    expect(visible()).toEqual(['keys']);
    expect(document.title).toBe('API keys and usage');
  });

  it('falls back to the keys when the section shown turns out unavailable, and forgets every other on reset', () => {
    const changes: string[] = [];
    const sections = new Sections(document, (s) => changes.push(s));
    sections.setAvailable('webhooks', true);
    sections.follow('#webhooks', { focus: true });
    expect(visible()).toEqual(['webhooks']);
    expect(document.activeElement?.id).toBe('webhooks-title');
    sections.setAvailable('webhooks', false);
    expect(visible()).toEqual(['keys']);
    sections.setAvailable('policy', true);
    sections.reset();
    expect(sections.isAvailable('policy')).toBe(false);
    expect(changes.at(-1)).toBe('keys');
  });
});
