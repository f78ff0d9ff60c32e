import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useCliDatabase } from '../support/cli.js';

/** The operator CLI's changes in the audit log, and `audit export`, as real processes on real PostgreSQL. */
describe('the operator CLI and the audit log', () => {
  const on = useCliDatabase();
  const { cli } = on;

  it('records every change an operator makes in an org, with the operator CLI as actor', async () => {
    const org = (await cli('org', 'create', '--name', 'Audited', '--plan', 'free')).json();
    const user = (await cli('user', 'create', '--email', `a-${randomUUID()}@example.com`)).json();
    expect((await cli('member', 'add', '--org', org.id, '--user', user.id, '--role', 'member')).code).toBe(0);
    expect((await cli('member', 'add', '--org', org.id, '--user', user.id, '--role', 'member')).code).toBe(0); // no change
    expect((await cli('member', 'add', '--org', org.id, '--user', user.id, '--role', 'admin')).code).toBe(0);
    const ws = (await cli('workspace', 'create', '--org', org.id, '--user', user.id)).json();
    expect((await cli('workspace', 'create', '--org', org.id, '--user', user.id)).code).toBe(0); // idempotent: no event
    expect((await cli('org', 'set-plan', '--org', org.id, '--plan', 'pro')).code).toBe(0);
    expect((await cli('org', 'set-plan', '--org', org.id, '--plan', 'pro')).code).toBe(0); // no change
    expect((await cli('session', '--user', user.id, '--org', org.id, '--ttl', '60')).code).toBe(0);
    expect((await cli('usage', 'record', '--org', org.id, '--meter', 'asks', '--count', '2')).code).toBe(0);
    expect((await cli('member', 'remove', '--org', org.id, '--user', user.id)).code).toBe(0);

    const rows = await on.seed.auditEvents(org.id);
    expect(rows.map((r) => [r.action, r.target_type, r.target_id, r.details])).toEqual([
      ['org.created', 'org', org.id, { name: 'Audited', plan: 'free' }],
      ['member.added', 'user', user.id, { role: 'member' }],
      ['member.role_changed', 'user', user.id, { from: 'member', to: 'admin' }],
      ['workspace.created', 'workspace', ws.id, { user_id: user.id }],
      ['org.plan_changed', 'org', org.id, { from: 'free', to: 'pro' }],
      ['session.issued', 'user', user.id, { ttl_seconds: 60 }],
      ['usage.recorded', 'org', org.id, { meter: 'asks', count: 2 }],
      ['member.removed', 'user', user.id, { role: 'admin' }],
    ]);
    for (const r of rows) {
      expect(r).toMatchObject({
        actor_type: 'operator',
        actor_id: null,
        actor_source: 'cli',
        credential_type: null,
        client_address: null,
      });
    }
    expect(JSON.stringify(rows)).not.toMatch(/eyJ/); // the issued token is not in the log
  }, 60_000);

  it('records nothing for a command that fails', async () => {
    const org = (await cli('org', 'create', '--name', 'F')).json();
    expect((await cli('member', 'remove', '--org', org.id, '--user', randomUUID())).code).not.toBe(0);
    expect((await on.seed.auditEvents(org.id)).map((r) => r.action)).toEqual(['org.created']);
  }, 30_000);

  it('exports an org’s events as JSON Lines, oldest first, across several batches, within --since/--until', async () => {
    const orgId = await on.seed.org();
    const other = await on.seed.org();
    // 1203 events a minute apart (more than two export batches), plus one in another org.
    await on.db.pool.query(
      `INSERT INTO audit_events (created_at, org_id, action, actor_type, actor_source, target_type, target_id, details)
       SELECT timestamptz '2031-01-01T00:00:00Z' + make_interval(mins => i), $1, 'org.plan_changed', 'operator', 'cli', 'org', $1, jsonb_build_object('i', i)
         FROM generate_series(0, 1202) AS i`,
      [orgId],
    );
    await on.db.pool.query(
      `INSERT INTO audit_events (created_at, org_id, action, actor_type, target_type, target_id, details)
       VALUES ('2031-01-01T00:30:00Z', $1, 'org.created', 'operator', 'org', $1, '{}')`,
      [other],
    );
    const all = await cli('audit', 'export', '--org', orgId);
    expect(all.code, all.stderr).toBe(0);
    const lines = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1203);
    expect(lines.map((e) => e.details.i)).toEqual([...Array(1203).keys()]);
    expect(lines[0]).toEqual({
      id: expect.any(String),
      created_at: '2031-01-01T00:00:00.000Z',
      org_id: orgId,
      action: 'org.plan_changed',
      actor: { type: 'operator', source: 'cli' },
      target: { type: 'org', id: orgId },
      details: { i: 0 },
    });

    const window = await cli(
      'audit',
      'export',
      '--org',
      orgId,
      '--since',
      '2031-01-01T00:10:00Z',
      '--until',
      '2031-01-01T00:20:00+00:00',
    );
    expect(
      window.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).details.i),
    ).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    const byDate = await cli('audit', 'export', '--org', orgId, '--until', '2031-01-01');
    expect(byDate.code, byDate.stderr).toBe(0);
    expect(byDate.stdout).toBe('');
  }, 60_000);

  it('refuses a bad --since, a bad --org and an unknown org with a message and a non-zero exit', async () => {
    const bad = await cli('audit', 'export', '--org', randomUUID(), '--since', 'yesterday');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--since must be an RFC 3339 time/);
    const notUuid = await cli('audit', 'export', '--org', 'acme');
    expect(notUuid.stderr).toMatch(/--org must be a UUID/);
    const missing = await cli('audit', 'export', '--org', randomUUID());
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/no org with id/);
    expect(missing.stdout).toBe('');
  }, 30_000);

  it('names audit export in its help', async () => {
    const help = await cli('--help');
    expect(help.stdout).toMatch(/audit export\s+Stream an org's audit events/);
    expect((await cli('audit', 'export', '--help')).stdout).toMatch(
      /audit export --org <org-id> \[--since <time>\] \[--until <time>\]/,
    );
  });
});
