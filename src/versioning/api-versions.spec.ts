import { describe, expect, it } from 'vitest';
import { API_VERSIONS, resolvePinned, VersionTable } from './api-versions.js';
import type { Deprecation } from './deprecations.js';
import { changesAfter, VERSION_CHANGES } from './version-changes.js';

const NOW = new Date('2026-12-01T00:00:00Z');
const sunset = (version: string, at: string): Deprecation => ({
  target: { version },
  deprecatedAt: new Date('2026-12-01T00:00:00Z'),
  sunsetAt: new Date(at),
  replacement: 'move on',
  link: '/changelog',
});

describe('VersionTable', () => {
  const table = new VersionTable();

  it('serves the listed versions and says why it refuses anything else', () => {
    expect(table.refusal('2026-11-01', NOW)).toBeNull();
    expect(table.refusal('2026-11-26', NOW)).toBeNull();
    expect(table.refusal('2026-13-01', NOW)).toBe('malformed');
    expect(table.refusal('26-11-01', NOW)).toBe('malformed');
    expect(table.refusal('2027-01-01', NOW)).toBe('future');
    expect(table.refusal('2026-10-31', NOW)).toBe('too_old');
    expect(table.refusal('2026-11-02', NOW)).toBe('unknown');
  });

  it('shares one frozen answer per served version (nothing allocated per request)', () => {
    expect(resolvePinned(table, '2026-11-26', NOW)).toBe(resolvePinned(table, '2026-11-26', NOW));
    expect(resolvePinned(table, null, NOW)).toEqual({ version: '2026-11-01' });
  });

  it('ends a version at its sunset: refused by header, pinned orgs get the oldest supported one and a warning', () => {
    const sunsetTable = new VersionTable(API_VERSIONS, [sunset('2026-11-01', '2027-01-01T00:00:00Z')]);
    const before = new Date('2026-12-31T23:59:59Z');
    const after = new Date('2027-01-01T00:00:00Z');
    expect(sunsetTable.refusal('2026-11-01', before)).toBeNull();
    expect(sunsetTable.refusal('2026-11-01', after)).toBe('sunset');
    expect(sunsetTable.supported(after)).toEqual(['2026-11-26', '2026-11-27']);
    const pinned = resolvePinned(sunsetTable, '2026-11-01', after);
    expect(pinned.version).toBe('2026-11-26');
    expect(pinned.warning).toMatch(/^299 - "API version 2026-11-01 is no longer supported; answered with 2026-11-26/);
    expect(resolvePinned(sunsetTable, null, after).version).toBe('2026-11-26');
  });
});

describe('the 2026-11-26 change of GET /api-keys', () => {
  const change = VERSION_CHANGES.find((c) => c.version === '2026-11-26')!;
  const down = change.operations.listApiKeys.response!;

  it('drops a null next_cursor for 2026-11-01 and keeps a real one', () => {
    expect(down({ keys: [], next_cursor: null })).toEqual({ keys: [] });
    expect(down({ keys: [], next_cursor: 'abc' })).toEqual({ keys: [], next_cursor: 'abc' });
  });

  it('applies to older versions only', () => {
    expect(changesAfter(VERSION_CHANGES, '2026-11-26')).not.toContain(change);
  });
});

describe('the 2026-11-27 change of the key records', () => {
  const change = VERSION_CHANGES.find((c) => c.version === '2026-11-27')!;
  const record = { id: 'k', name: 'n', state: 'pending' };

  it('gives older versions `status` for a held or refused key and no `state` on a personal record', () => {
    expect(change.operations.mintApiKey.response!(record)).toEqual({ id: 'k', name: 'n', status: 'pending' });
    expect(change.operations.updateApiKey.response!({ ...record, state: 'active' })).toEqual({ id: 'k', name: 'n' });
    expect(change.operations.listApiKeys.response!({ keys: [{ ...record, state: 'denied' }] })).toEqual({
      keys: [{ id: 'k', name: 'n', status: 'denied' }],
    });
  });

  it("keeps `state` on the org admins' lists, where older versions had it", () => {
    expect(change.operations.listOrgApiKeys.response!({ keys: [record] })).toEqual({
      keys: [{ id: 'k', name: 'n', status: 'pending', state: 'pending' }],
    });
  });

  it('applies to the versions before it only', () => {
    expect(changesAfter(VERSION_CHANGES, '2026-11-26')).toEqual([change]);
    expect(changesAfter(VERSION_CHANGES, '2026-11-27')).toEqual([]);
  });
});
