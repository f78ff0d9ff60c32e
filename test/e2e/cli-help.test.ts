import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/admin-commands.js';
import { useCliDatabase } from '../support/cli.js';
import { ROOT, runCli } from '../support/processes.js';

/** The operator CLI as a new operator meets it: help, version, refusals that say what is valid, exit codes. */
describe('the operator CLI helps', () => {
  const on = useCliDatabase();
  const { cli } = on;
  // Nothing here needs a database until the last test: help and usage errors never open one.
  const offline = (...args: string[]) =>
    runCli(args, { NODE_ENV: 'test', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });

  it('--help lists every command with its summary and the exit codes, on stdout, exit 0', async () => {
    const res = await offline('--help');
    expect(res.code).toBe(0);
    for (const name of Object.keys(COMMANDS)) expect(res.stdout).toContain(`  ${name} `);
    expect(res.stdout).toMatch(/Exit codes: 0 .*1 .*2 /s);
    expect(res.stderr).toBe('');
  });

  it('<command> --help shows its synopsis, each flag with required/optional, and what it prints', async () => {
    for (const [name, spec] of Object.entries(COMMANDS)) {
      const res = await offline(...name.split(' '), '--help');
      expect(res.code, name).toBe(0);
      expect(res.stdout, name).toMatch(new RegExp(`^Usage: npm run --silent admin -- ${name} `));
      for (const flag of Object.keys(spec.flags))
        expect(res.stdout, `${name} --${flag}`).toMatch(new RegExp(`--${flag} .*(required|optional)`));
      expect(res.stdout).toContain(`Prints: ${spec.prints}`);
      const viaHelp = await offline('help', ...name.split(' '));
      expect(viaHelp.stdout).toBe(res.stdout);
    }
  }, 60_000);

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8'));
    const res = await offline('--version');
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toBe(`${pkg.name} ${pkg.version}`);
  });

  it('refuses an unknown flag with the list of valid ones (exit 2), before touching the database', async () => {
    const res = await offline('member', 'add', '--org', randomUUID(), '--colour', 'red');
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/unknown flag --colour for "member add"; valid flags: --org, --user, --role, --help/);
    expect(res.stderr).toMatch(/member add --help/);
  });

  it.each([
    [['frobnicate'], /unknown command "frobnicate"/],
    [['org', 'create'], /missing --name/],
    [['org', 'set-plan', '--org', 'nope', '--plan', 'pro'], /--org must be a UUID/],
    [['session', '--user', randomUUID(), 'extra'], /unexpected argument "extra"/],
  ])('a usage error %j exits 2 without opening the database', async (args, message) => {
    const res = await offline(...(args as string[]));
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(message);
    expect(res.stderr).not.toMatch(/ECONNREFUSED|retrying/);
  });

  it('workspace create refuses a user who is not a member of the org (exit 1), and creates nothing', async () => {
    const org = (await cli('org', 'create', '--name', 'W')).json();
    const user = (await cli('user', 'create', '--email', `w-${randomUUID()}@example.com`)).json();
    const res = await cli('workspace', 'create', '--org', org.id, '--user', user.id);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(
      new RegExp(`user ${user.id} is not a member of org ${org.id}: add them first \\(member add`),
    );
    const { rowCount } = await on.db.pool.query(`SELECT 1 FROM workspaces WHERE org_id = $1`, [org.id]);
    expect(rowCount).toBe(0);
    await cli('member', 'add', '--org', org.id, '--user', user.id, '--role', 'member');
    expect((await cli('workspace', 'create', '--org', org.id, '--user', user.id)).code).toBe(0);
  }, 30_000);
});
