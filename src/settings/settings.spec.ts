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

describe('Settings.usageCharging', () => {
  it('is leased by default, takes exact, and refuses any other value naming the option', () => {
    expect(new Settings({ session }).usageCharging).toBe('leased');
    expect(new Settings({ session, usage: { charging: 'exact' } }).usageCharging).toBe('exact');
    expect(() => new Settings({ session, usage: { charging: 'lazy' as 'exact' } })).toThrow(
      'usage.charging must be "leased" or "exact"; got "lazy"',
    );
  });
});
