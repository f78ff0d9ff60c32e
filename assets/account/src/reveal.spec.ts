import { beforeEach, describe, expect, it, vi } from 'vitest';
import { initReveal, openReveal } from './reveal.js';
import { loadPage } from './test/page.js';

const SECRET = 'svc_live_AbCdEfGhIjKl_0123456789abcdefghijklmnop';
const click = (id: string) => document.getElementById(id)!.click();

describe('the one-time reveal', () => {
  beforeEach(() => {
    loadPage();
    initReveal();
  });

  it('asks before closing a key that was not copied, and once closed the key is nowhere in the page', () => {
    const focusAfter = vi.fn();
    openReveal(SECRET, { name: 'ci', scopes: ['decisions:read'], expires_at: null }, 'created', focusAfter);
    const dialog = document.getElementById('reveal-dialog') as HTMLDialogElement;
    expect(dialog.open).toBe(true);
    expect((document.getElementById('reveal-key') as HTMLTextAreaElement).value).toBe(SECRET);
    expect(document.getElementById('reveal-summary')!.textContent).toBe('ci · decisions:read · never expires');

    click('reveal-close');
    expect(dialog.open).toBe(true);
    expect(document.getElementById('reveal-confirm')!.hidden).toBe(false);
    click('reveal-keep');
    expect(document.getElementById('reveal-confirm')!.hidden).toBe(true);

    click('reveal-close');
    click('reveal-discard');
    expect(dialog.open).toBe(false);
    expect(document.getElementById('reveal-key')).toBeNull();
    expect(document.documentElement.outerHTML).not.toContain(SECRET);
    expect(focusAfter).toHaveBeenCalledOnce();
  });
});
