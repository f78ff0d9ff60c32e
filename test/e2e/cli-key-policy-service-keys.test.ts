import { describe, expect, it } from 'vitest';
import { useCliDatabase } from '../support/cli.js';
import { insertKeyRow, NOWHERE } from '../support/factories.js';

/** `org key-policy`, `org set-key-policy` and `service-key list|mint|revoke`: the operator, audited as the CLI. */
describe('the operator CLI: key policy and service keys', () => {
  const on = useCliDatabase();
  const { cli } = on;
  const audits = async (orgId: string, action: string) =>
    (
      await on.db.pool.query(`SELECT actor_type, actor_id FROM audit_events WHERE org_id = $1 AND action = $2`, [
        orgId,
        action,
      ])
    ).rows;

  it('prints the policy, changes only the rules given, cuts keys to a new lifetime, and audits it with the CLI as actor', async () => {
    const w = await on.seed.world('owner');
    const key = await insertKeyRow(on.db.pool, { userId: w.userId, orgId: w.orgId });
    const none = await cli('org', 'key-policy', '--org', w.orgId);
    expect(none.code, none.stderr).toBe(0);
    expect(none.json()).toEqual({
      max_lifetime_days: null,
      require_expiry: false,
      stale_after_days: null,
      allowed_scopes_by_role: null,
      approval_required_for: null,
    });

    const set = await cli(
      'org',
      'set-key-policy',
      '--org',
      w.orgId,
      '--max-lifetime-days',
      '30',
      '--require-expiry',
      'true',
      '--approval-required-for',
      'decisions:write',
    );
    expect(set.code, set.stderr).toBe(0);
    expect(set.json()).toMatchObject({
      max_lifetime_days: 30,
      require_expiry: true,
      stale_after_days: null,
      approval_required_for: ['decisions:write'],
      updated_at: expect.any(String),
    });
    const { rows } = await on.db.pool.query(`SELECT expires_at - created_at AS lifetime FROM api_keys WHERE id = $1`, [
      key.id,
    ]);
    expect(rows[0].lifetime).toMatchObject({ days: 30 });

    const more = await cli(
      'org',
      'set-key-policy',
      '--org',
      w.orgId,
      '--stale-after-days',
      '100',
      '--max-lifetime-days',
      'none',
      '--approval-required-for',
      'none',
    );
    expect(more.code, more.stderr).toBe(0);
    expect(more.json()).toMatchObject({
      max_lifetime_days: null,
      require_expiry: true,
      stale_after_days: 100,
      approval_required_for: null,
    });
    expect((await cli('org', 'key-policy', '--org', w.orgId)).json()).toMatchObject({
      require_expiry: true,
      stale_after_days: 100,
    });
    expect(await audits(w.orgId, 'org.key_policy_updated')).toEqual([
      { actor_type: 'operator', actor_id: null },
      { actor_type: 'operator', actor_id: null },
    ]);
  });

  it.each([
    [['--max-lifetime-days', '0'], '--max-lifetime-days must be none or an integer from 1 to 366'],
    [['--max-lifetime-days', '30d'], '--max-lifetime-days'],
    [['--stale-after-days', '29'], '--stale-after-days must be none or an integer from 30 to 730'],
    [['--require-expiry', 'yes'], '--require-expiry must be true or false'],
    [['--approval-required-for', 'decisions:read,admin:all'], '--approval-required-for must be scopes'],
    [[], 'give at least one of'],
  ])('refuses set-key-policy %j as a usage error (exit 2) naming the flag', async (flags, message) => {
    const res = await cli('org', 'set-key-policy', '--org', NOWHERE, ...flags);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(message);
  });

  it('fails (exit 1) for an org that does not exist', async () => {
    for (const args of [
      ['org', 'key-policy'],
      ['org', 'set-key-policy', '--require-expiry', 'true'],
      ['service-key', 'list'],
      ['service-key', 'mint', '--name', 'x'],
    ]) {
      const res = await cli(...args, '--org', NOWHERE);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stderr).toContain(`no org with id ${NOWHERE}`);
    }
  });

  it('mints a service key as the owner would, under the org key policy, printing the key once; lists and revokes it; audited as the CLI', async () => {
    const w = await on.seed.world('owner');
    expect((await cli('org', 'set-key-policy', '--org', w.orgId, '--require-expiry', 'true')).code).toBe(0);
    const refused = await cli(
      'service-key',
      'mint',
      '--org',
      w.orgId,
      '--name',
      'deploys',
      '--scopes',
      'decisions:read,decisions:write',
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('require_expiry');

    const minted = await cli(
      'service-key',
      'mint',
      '--org',
      w.orgId,
      '--name',
      'deploys',
      '--scopes',
      'decisions:read,decisions:write',
      '--expires-in-days',
      '7',
    );
    expect(minted.code, minted.stderr).toBe(0);
    const key = minted.json();
    expect(key).toMatchObject({
      key: expect.stringMatching(/^svc_live_/),
      name: 'deploys',
      scopes: ['decisions:read', 'decisions:write'],
      owner: { type: 'org' },
      org_id: w.orgId,
    });
    expect(key).not.toHaveProperty('created_by');
    expect(key.expires_at).toBeDefined();

    const listed = await cli('service-key', 'list', '--org', w.orgId);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json().keys).toEqual([
      expect.objectContaining({ id: key.id, state: 'active', user_id: key.user_id }),
    ]);
    expect(listed.stdout).not.toContain(key.key);

    const revoked = await cli('service-key', 'revoke', '--org', w.orgId, '--key', key.id);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.json()).toEqual({ id: key.id, org_id: w.orgId, revoked: true });
    expect((await cli('service-key', 'revoke', '--org', w.orgId, '--key', key.id)).code).toBe(0);
    expect((await cli('service-key', 'list', '--org', w.orgId, '--state', 'revoked')).json().keys).toEqual([
      expect.objectContaining({ id: key.id, state: 'revoked' }),
    ]);

    expect(await audits(w.orgId, 'service_key.minted')).toEqual([{ actor_type: 'operator', actor_id: null }]);
    expect(await audits(w.orgId, 'service_key.revoked')).toEqual([{ actor_type: 'operator', actor_id: null }]);
    const events = (
      await on.db.pool.query(
        `SELECT type, data FROM event_outbox WHERE org_id = $1 AND type LIKE 'service_key.%' ORDER BY created_at`,
        [w.orgId],
      )
    ).rows;
    expect(events.map((e) => e.type)).toEqual(['service_key.created', 'service_key.revoked']);
    expect([events[0].data.created_by, events[1].data.revoked_by]).toEqual([null, null]);
  });

  it('refuses a personal key or no such key on revoke (exit 1), and bad flags as usage errors (exit 2)', async () => {
    const w = await on.seed.world('owner');
    const personal = await insertKeyRow(on.db.pool, { userId: w.userId, orgId: w.orgId });
    const res = await cli('service-key', 'revoke', '--org', w.orgId, '--key', personal.id);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`no service key with id ${personal.id}`);
    for (const [args, message] of [
      [
        ['service-key', 'mint', '--org', w.orgId, '--name', 'x', '--scopes', 'decisions:admin'],
        '--scopes must be scopes',
      ],
      [
        ['service-key', 'mint', '--org', w.orgId, '--name', 'x', '--expires-in-days', '367'],
        '--expires-in-days must be an integer from 0 to 366',
      ],
      [['service-key', 'mint', '--org', w.orgId], 'missing --name'],
      [['service-key', 'list', '--org', w.orgId, '--state', 'gone'], '--state must be one of'],
      [['service-key', 'list', '--org', w.orgId, '--cursor', 'nope'], '--cursor is not a cursor this service returned'],
    ] as const) {
      const bad = await cli(...args);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr).toContain(message);
    }
  });
});
