import { describe, expect, it } from 'vitest';
import {
  chooseTestDatabase,
  DEFAULT_TEST_DATABASE_URL,
  TestDatabaseConfigError,
  type ProbeResult,
} from './test-postgres.js';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
const timedOut = new Error('Connection terminated due to connection timeout');
const badPassword = Object.assign(new Error('password authentication failed for user "postgres"'), { code: '28P01' });
const noDatabase = Object.assign(new Error('database "nope" does not exist'), { code: '3D000' });

function probe(result: ProbeResult) {
  const asked: string[] = [];
  return { asked, fn: async (url: string) => (asked.push(url), result) };
}

describe('which PostgreSQL the tests use', () => {
  it('uses TEST_DATABASE_URL when it answers, before DATABASE_URL', async () => {
    const p = probe({ ok: true });
    const choice = await chooseTestDatabase(
      { TEST_DATABASE_URL: 'postgres://a@127.0.0.1:6000/t', DATABASE_URL: 'postgres://b@127.0.0.1:7000/t' },
      p.fn,
    );
    expect(choice).toEqual({ kind: 'server', url: 'postgres://a@127.0.0.1:6000/t', source: 'TEST_DATABASE_URL' });
    expect(p.asked).toEqual(['postgres://a@127.0.0.1:6000/t']);
  });

  it('falls back to DATABASE_URL, then to the local default', async () => {
    expect(
      await chooseTestDatabase({ DATABASE_URL: 'postgres://b@127.0.0.1:7000/t' }, probe({ ok: true }).fn),
    ).toMatchObject({ source: 'DATABASE_URL' });
    expect(await chooseTestDatabase({}, probe({ ok: true }).fn)).toEqual({
      kind: 'server',
      url: DEFAULT_TEST_DATABASE_URL,
      source: 'default',
    });
  });

  it('starts a throwaway PostgreSQL when the server cannot be reached (refused or timed out)', async () => {
    for (const error of [refused, timedOut]) {
      const choice = await chooseTestDatabase(
        { TEST_DATABASE_URL: 'postgres://a:secret@127.0.0.1:1/t' },
        probe({ ok: false, error }).fn,
      );
      expect(choice.kind).toBe('embedded');
      expect(choice.kind === 'embedded' && choice.reason).toMatch(
        /no PostgreSQL at postgres:\/\/a:\*\*\*@127\.0\.0\.1:1\/t/,
      );
      expect(JSON.stringify(choice)).not.toContain('secret');
    }
    expect((await chooseTestDatabase({}, probe({ ok: false, error: refused }).fn)).kind).toBe('embedded');
  });

  it('refuses a URL someone set that reaches a server which turns us away, rather than testing elsewhere', async () => {
    for (const error of [badPassword, noDatabase]) {
      await expect(
        chooseTestDatabase({ TEST_DATABASE_URL: 'postgres://a@127.0.0.1:5432/t' }, probe({ ok: false, error }).fn),
      ).rejects.toThrow(TestDatabaseConfigError);
    }
    await expect(
      chooseTestDatabase(
        { DATABASE_URL: 'postgres://a@127.0.0.1:5432/t' },
        probe({ ok: false, error: badPassword }).fn,
      ),
    ).rejects.toThrow(/DATABASE_URL does not work: authentication failed/);
  });

  it('with nothing set, any failure of the local default means the throwaway server', async () => {
    expect((await chooseTestDatabase({}, probe({ ok: false, error: badPassword }).fn)).kind).toBe('embedded');
  });
});
