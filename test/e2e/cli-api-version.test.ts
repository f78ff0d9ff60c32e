import { describe, expect, it } from 'vitest';
import { useCliDatabase } from '../support/cli.js';

/** `org set-version`: an operator moves an org to another dated API version. */
describe('the operator CLI: org set-version', () => {
  const on = useCliDatabase();
  const { cli } = on;

  it('creates orgs pinned to 2026-11-01, moves one, and records the change in the audit log', async () => {
    const org = (await cli('org', 'create', '--name', 'Acme')).json();
    const { rows } = await on.db.pool.query(`SELECT api_version FROM orgs WHERE id = $1`, [org.id]);
    expect(rows[0].api_version).toBe('2026-11-01');
    const moved = await cli('org', 'set-version', '--org', org.id, '--version', '2026-11-26');
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.json()).toEqual({ id: org.id, name: 'Acme', plan: 'free', api_version: '2026-11-26' });
    const audit = await on.db.pool.query(
      `SELECT action, details FROM audit_events WHERE org_id = $1 AND action = 'org.api_version_changed'`,
      [org.id],
    );
    expect(audit.rows).toEqual([
      { action: 'org.api_version_changed', details: { from: '2026-11-01', to: '2026-11-26' } },
    ]);
  });

  it.each([
    ['2026-11-15', /not a version of this API; versions: 2026-11-01, 2026-11-26/],
    ['tomorrow', /not a date/],
  ])('refuses --version %s and changes nothing', async (version, why) => {
    const org = (await cli('org', 'create', '--name', 'Acme')).json();
    const res = await cli('org', 'set-version', '--org', org.id, '--version', version);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(why);
    const { rows } = await on.db.pool.query(`SELECT api_version FROM orgs WHERE id = $1`, [org.id]);
    expect(rows[0].api_version).toBe('2026-11-01');
  });

  it('says so when the org does not exist', async () => {
    const res = await cli(
      'org',
      'set-version',
      '--org',
      '0b9e4a7e-3c55-4c1e-9d9a-5b8f1e2d7c61',
      '--version',
      '2026-11-26',
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/no org with id/);
  });
});
