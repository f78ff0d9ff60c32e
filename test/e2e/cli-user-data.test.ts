import { describe, expect, it } from 'vitest';
import { cliEnv, useCliDatabase } from '../support/cli.js';
import { NOWHERE } from '../support/factories.js';
import { runCli } from '../support/processes.js';

/** `user export` and `user erase` as real processes of the built CLI on real PostgreSQL. */
describe('the operator CLI: a person’s data', () => {
  const on = useCliDatabase();
  const { cli } = on;

  it('exports a user as one JSON document and erases them with the operator CLI as actor; again, nothing left to do', async () => {
    const w = await on.seed.world('member');
    const exported = await cli('user', 'export', '--user', w.userId);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout.endsWith('}\n')).toBe(true);
    expect(exported.json()).toMatchObject({
      user: { id: w.userId, email: w.email },
      memberships: [{ org_id: w.orgId, role: 'member' }],
      api_keys: [],
      audit_events: [],
    });

    const erased = await cli('user', 'erase', '--user', w.userId);
    expect(erased.code, erased.stderr).toBe(0);
    expect(erased.json()).toEqual({
      user_id: w.userId,
      email: `erased-${w.userId}@erased.invalid`,
      keys_revoked: 0,
      orgs_left: [w.orgId],
      audit_events_pseudonymised: 1,
    });
    const [event] = (await on.seed.auditEvents(w.orgId)).filter((e) => e.action === 'user.erased');
    expect(event).toMatchObject({ actor_type: 'operator', actor_source: 'cli', details: { role: 'member' } });
    expect(event.target_id).not.toBe(w.userId);

    expect((await cli('user', 'erase', '--user', w.userId)).json()).toMatchObject({
      keys_revoked: 0,
      orgs_left: [],
      audit_events_pseudonymised: 0,
    });
  }, 60_000);

  it('exits 1 naming an unknown user, and 2 for a malformed id, changing nothing', async () => {
    for (const command of ['erase', 'export']) {
      const unknown = await cli('user', command, '--user', NOWHERE);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe(`error: no user with id ${NOWHERE}\n`);
      expect(unknown.stdout).toBe('');
    }
    const bad = await cli('user', 'erase', '--user', 'nobody');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--user must be a UUID');
  }, 60_000);

  it('refuses to erase without API_KEY_SECRET (exit 1), before changing anything', async () => {
    const w = await on.seed.world('owner');
    const result = await runCli(['user', 'erase', '--user', w.userId], {
      ...cliEnv(on.db.url),
      API_KEY_SECRET: undefined,
      NODE_ENV: 'production',
      SESSION_JWT_ISSUER: 'https://id.example',
      SESSION_JWT_AUDIENCE: 'kui',
    });
    expect(result.code, result.stdout).toBe(1);
    expect(result.stderr).toMatch(/needs API_KEY_SECRET/);
    expect(
      (await on.db.pool.query(`SELECT count(*)::int AS n FROM memberships WHERE user_id = $1`, [w.userId])).rows[0].n,
    ).toBe(1);
    expect((await on.db.pool.query(`SELECT email::text FROM users WHERE id = $1`, [w.userId])).rows[0].email).toBe(
      w.email,
    );
  }, 60_000);

  it('lists both commands in the help', async () => {
    const help = await cli('--help');
    expect(help.stdout).toMatch(/user export\s+Print everything/);
    expect(help.stdout).toMatch(/user erase\s+Erase a user/);
  });
});
