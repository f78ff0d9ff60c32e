import { describe, expect, it } from 'vitest';
import { Settings } from './settings.js';

const session = { secret: 's'.repeat(32) };

describe('Settings.database: a DataSource behind a transaction pooler', () => {
  it('without the option: named statements, nothing added to transactions, no direct URL', () => {
    expect(new Settings({ session }).database).toEqual({
      directUrl: null,
      namedStatements: true,
      transactionStatementTimeoutMs: null,
      idleInTransactionMs: 10_000,
    });
  });

  it('with a direct URL, named statements are off unless asked for', () => {
    const direct = 'postgres://u@primary:5432/db';
    expect(new Settings({ session, database: { directUrl: direct } }).database).toMatchObject({
      directUrl: direct,
      namedStatements: false,
    });
    expect(
      new Settings({ session, database: { directUrl: direct, namedStatements: true } }).database.namedStatements,
    ).toBe(true);
  });

  it('refuses a direct URL that is not postgres, and a timeout that is not a positive integer', () => {
    expect(() => new Settings({ session, database: { directUrl: 'mysql://u@h/db' } })).toThrow(
      'database.directUrl must be a postgres:// or postgresql:// URL',
    );
    expect(() => new Settings({ session, database: { transactionStatementTimeoutMs: 0 } })).toThrow(
      'database.transactionStatementTimeoutMs must be a positive integer',
    );
    expect(() => new Settings({ session, database: { idleInTransactionMs: 1.5 } })).toThrow(
      'database.idleInTransactionMs must be a positive integer',
    );
  });
});
