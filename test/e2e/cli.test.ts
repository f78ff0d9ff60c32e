import { randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { describe, expect, it } from 'vitest';
import { useCliDatabase } from '../support/cli.js';
import { TEST_SESSION_SECRET } from '../support/seed.js';

/** The operator CLI contract of decisions.md, run as a real process against real PostgreSQL. */
describe('the operator CLI', () => {
  const on = useCliDatabase();
  const { cli } = on;

  it('creates an org, a user, a membership and a workspace, each printing one JSON object', async () => {
    const org = await cli('org', 'create', '--name', 'Acme');
    expect(org.code, org.stderr).toBe(0);
    expect(org.json()).toEqual({ id: expect.any(String), name: 'Acme', plan: 'free' });
    expect(org.stdout.trim().split('\n')).toHaveLength(1);

    const id = randomUUID();
    const user = await cli('user', 'create', '--email', 'grace@example.com', '--id', id);
    expect(user.json()).toEqual({ id, email: 'grace@example.com' });

    const member = await cli('member', 'add', '--org', org.json().id, '--user', id, '--role', 'viewer');
    expect(member.code, member.stderr).toBe(0);
    expect(member.json()).toMatchObject({ org_id: org.json().id, user_id: id, role: 'viewer' });
    const again = await cli('member', 'add', '--org', org.json().id, '--user', id, '--role', 'admin');
    expect(again.json()).toMatchObject({ role: 'admin' });

    const ws = await cli('workspace', 'create', '--org', org.json().id, '--user', id);
    expect(ws.code, ws.stderr).toBe(0);
    expect(ws.json()).toMatchObject({ id: expect.any(String), org_id: org.json().id, user_id: id });

    const plan = await cli('org', 'set-plan', '--org', org.json().id, '--plan', 'pro');
    expect(plan.json()).toEqual({ id: org.json().id, name: 'Acme', plan: 'pro' });

    const { rows } = await on.db.pool.query(`SELECT role FROM memberships WHERE user_id = $1`, [id]);
    expect(rows).toEqual([{ role: 'admin' }]);
  }, 30_000);

  it('signs a session token for a user that the service accepts, with the org and lifetime asked for', async () => {
    const org = (await cli('org', 'create', '--name', 'S')).json();
    const user = (await cli('user', 'create', '--email', `s-${randomUUID()}@example.com`)).json();
    await cli('member', 'add', '--org', org.id, '--user', user.id, '--role', 'member');
    const res = await cli('session', '--user', user.id, '--org', org.id, '--ttl', '120');
    expect(res.code, res.stderr).toBe(0);
    expect(Object.keys(res.json())).toEqual(['token']);
    const claims = jwt.verify(res.json().token, TEST_SESSION_SECRET, { algorithms: ['HS256'] }) as jwt.JwtPayload;
    expect(claims).toMatchObject({ sub: user.id, email: user.email, org_id: org.id });
    expect(claims.exp! - claims.iat!).toBe(120);
  }, 30_000);

  it('removes a member', async () => {
    const org = (await cli('org', 'create', '--name', 'R')).json();
    const user = (await cli('user', 'create', '--email', `r-${randomUUID()}@example.com`)).json();
    await cli('member', 'add', '--org', org.id, '--user', user.id, '--role', 'member');
    const removed = await cli('member', 'remove', '--org', org.id, '--user', user.id);
    expect(removed.code, removed.stderr).toBe(0);
    const { rowCount } = await on.db.pool.query(`SELECT 1 FROM memberships WHERE org_id = $1`, [org.id]);
    expect(rowCount).toBe(0);
    const twice = await cli('member', 'remove', '--org', org.id, '--user', user.id);
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toMatch(/not a member/);
  }, 30_000);

  it('records usage through the atomic path and refuses, recording nothing, past the limit', async () => {
    const org = (await cli('org', 'create', '--name', 'U')).json();
    const ok = await cli('usage', 'record', '--org', org.id, '--meter', 'imports', '--count', '8');
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.json()).toMatchObject({ org_id: org.id, meter: 'imports', imports: 8 });
    const over = await cli('usage', 'record', '--org', org.id, '--meter', 'imports', '--count', '3');
    expect(over.code).not.toBe(0);
    expect(over.stdout).toBe('');
    expect(over.stderr).toMatch(/limit/i);
    const { rows } = await on.db.pool.query(`SELECT imports FROM usage_counters WHERE org_id = $1`, [org.id]);
    expect(rows).toEqual([{ imports: 8 }]);
  }, 30_000);

  it.each([
    [['frobnicate'], /unknown command/],
    [[], /Usage/],
    [['org', 'create'], /missing --name/],
    [['org', 'create', '--name', 'X', '--plan', 'gold'], /--plan must be one of free, pro/],
    [['org', 'create', '--name', 'X', '--colour', 'red'], /unknown|colour/],
    [['org', 'set-plan', '--org', 'not-a-uuid', '--plan', 'pro'], /--org must be a UUID/],
    [['org', 'set-plan', '--org', randomUUID(), '--plan', 'pro'], /no org/],
    [['user', 'create', '--email', 'nope'], /--email must be an e-mail/],
    [['member', 'add', '--org', randomUUID(), '--user', randomUUID(), '--role', 'king'], /--role must be one of/],
    [['member', 'add', '--org', randomUUID(), '--user', randomUUID(), '--role', 'owner'], /no org/],
    [['workspace', 'create', '--org', randomUUID(), '--user', randomUUID()], /no org/],
    [['session', '--user', randomUUID()], /no user/],
    [['session', '--user', randomUUID(), '--ttl', 'soon'], /--ttl must be an integer/],
    [['usage', 'record', '--org', randomUUID(), '--meter', 'cookies'], /--meter must be one of/],
    [['usage', 'record', '--org', randomUUID(), '--meter', 'asks'], /no org/],
  ])(
    'fails cleanly on %j: non-zero exit, nothing on stdout, a clear message on stderr',
    async (args, message) => {
      const res = await cli(...(args as string[]));
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(message);
      expect(res.stderr).not.toMatch(/\n\s+at /); // no stack trace
    },
    30_000,
  );

  it('refuses a duplicate e-mail', async () => {
    const email = `dup-${randomUUID()}@example.com`;
    expect((await cli('user', 'create', '--email', email)).code).toBe(0);
    const dup = await cli('user', 'create', '--email', email.toUpperCase());
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toMatch(/already exists/);
  }, 30_000);
});
