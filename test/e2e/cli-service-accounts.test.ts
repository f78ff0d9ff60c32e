import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/processes.js';
import { TEST_SESSION_SECRET } from '../support/seed.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

describe('the operator CLI and service accounts', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db?.drop());

  it('refuses to create a user at the address domain reserved for service accounts (exit 1 naming it), creating nothing', async () => {
    const env = { DATABASE_URL: db.url, NODE_ENV: 'test', SESSION_JWT_SECRET: TEST_SESSION_SECRET };
    const refused = await runCli(['user', 'create', '--email', 'svc-x@Service-Accounts.invalid'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/@service-accounts\.invalid are reserved for service accounts/);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM users`)).rows[0].n).toBe(0);
    const person = await runCli(['user', 'create', '--email', 'ada@example.com'], env);
    expect(person.code, person.stderr).toBe(0);
  });
});
