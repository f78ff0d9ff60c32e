import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keyRecord, loadPage, testContext } from '../test/page.js';
import { keyRows } from './key-row.js';
import type { KeysPanel } from './keys-panel.js';
import type { KeyRecord } from './key-view.js';

const key = (over: Partial<KeyRecord> = {}): KeyRecord =>
  keyRecord({
    state: 'disabled',
    enabled: false,
    ...over,
  });
/** A deployment whose document lists the owner's PATCH. */
const doc = { paths: { '/api-keys/{keyID}': { patch: {} } } };
const NOW = Date.parse('2026-11-27T12:00:00Z');

function rowOf(record: KeyRecord, update = vi.fn(async () => true)) {
  const panel = { openDetails: new Set<string>(), update } as Partial<KeysPanel> as KeysPanel;
  const [row] = keyRows(testContext({ doc }), panel, record, NOW);
  document.body.append(row!);
  return row!;
}
const enableButton = (row: HTMLElement) => row.querySelector<HTMLButtonElement>('button[aria-label="Enable partner"]')!;

describe('a row of the caller’s own keys', () => {
  beforeEach(loadPage);

  it('offers Enable for a key its owner disabled, with no "set by an admin" label', () => {
    const update = vi.fn(async () => true);
    const row = rowOf(key({ controls_set_by: { enabled: 'owner' } }), update);
    expect(row.querySelector('.badge.set-by')).toBeNull();
    expect(enableButton(row).disabled).toBe(false);
    enableButton(row).click();
    expect(update).toHaveBeenCalledWith(
      expect.objectContaining({ id: key().id }),
      { enabled: true },
      'Key partner enabled.',
    );
  });

  it('labels a key an admin disabled "set by an admin" and disables Enable, saying only an admin can enable it', () => {
    const update = vi.fn(async () => true);
    const row = rowOf(key({ controls_set_by: { enabled: 'admin' } }), update);
    const status = row.querySelector<HTMLElement>('.cell-status')!;
    expect(status.querySelector('.badge.set-by')!.textContent).toBe('set by an admin');
    const button = enableButton(row);
    expect(button.disabled).toBe(true);
    const note = document.getElementById(button.getAttribute('aria-describedby')!)!;
    expect(status.contains(note)).toBe(true);
    expect(note.textContent).toBe('Only an org owner or admin can enable it again.');
    button.click();
    expect(update).not.toHaveBeenCalled();
  });

  it('still offers Disable on an active key whose other controls an admin set (disabling narrows)', () => {
    const row = rowOf(key({ state: 'active', enabled: undefined, controls_set_by: { rate_limits: 'admin' } }));
    const disable = row.querySelector<HTMLButtonElement>('button[aria-label="Disable partner"]')!;
    expect(disable.disabled).toBe(false);
    expect(row.querySelector('.cell-status .badge.set-by')).toBeNull();
  });
});
