import { describe, expect, it } from 'vitest';
import {
  assertDatabaseUrl,
  classifyConnectionError,
  connectWithRetry,
  DatabaseStartupError,
  describeDatabaseUrl,
} from './connection-errors.js';

const err = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});

describe('classifying failures to connect to PostgreSQL', () => {
  it('calls wrong credentials, a missing database, an unknown host and a bad URL permanent', () => {
    for (const [e, code] of [
      [err('password authentication failed for user "x"', '28P01'), '28P01'],
      [err('no pg_hba.conf entry', '28000'), '28000'],
      [err('database "x" does not exist', '3D000'), '3D000'],
      [err('getaddrinfo ENOTFOUND db.example', 'ENOTFOUND'), 'ENOTFOUND'],
      [err('Invalid URL', 'ERR_INVALID_URL'), 'ERR_INVALID_URL'],
    ] as const) {
      expect(classifyConnectionError(e)).toMatchObject({ kind: 'permanent', code });
    }
  });

  it("calls a pooler's refusal of startup parameters permanent, and says what to set", () => {
    const failure = classifyConnectionError(err('unsupported startup parameter: statement_timeout', '08P01'));
    expect(failure).toMatchObject({ kind: 'permanent', code: '08P01' });
    expect(failure.reason).toMatch(/set DATABASE_DIRECT_URL/);
  });

  it('calls refused connections, timeouts and a server starting up transient', () => {
    expect(classifyConnectionError(err('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'))).toMatchObject({
      kind: 'transient',
      code: 'ECONNREFUSED',
    });
    expect(classifyConnectionError(err('the database system is starting up', '57P03'))).toMatchObject({
      kind: 'transient',
      code: '57P03',
    });
    expect(classifyConnectionError(err('timeout expired'))).toMatchObject({ kind: 'transient', code: 'timeout' });
    expect(classifyConnectionError(err('Connection terminated due to connection timeout'))).toMatchObject({
      kind: 'transient',
      code: 'timeout',
    });
    // Node wraps the attempts on every address of a host in an AggregateError.
    const all = Object.assign(new AggregateError([err('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED')], ''), {});
    expect(classifyConnectionError(all)).toMatchObject({ kind: 'transient', code: 'ECONNREFUSED' });
  });

  it('reads the code through a TypeORM wrapper and treats the unknown as permanent', () => {
    expect(classifyConnectionError({ message: 'x', driverError: err('x', '57P03') })).toMatchObject({
      kind: 'transient',
    });
    expect(classifyConnectionError(err('self-signed certificate'))).toMatchObject({ kind: 'permanent' });
  });

  it('describes a database URL without its password', () => {
    expect(describeDatabaseUrl('postgres://kui:s3cret@db:5432/kui')).toBe('postgres://kui@db:5432/kui');
  });

  it('refuses a malformed URL before any connection', () => {
    expect(() => assertDatabaseUrl('postgres://u@127.0.0.1:99999/x')).toThrow(DatabaseStartupError);
    expect(() => assertDatabaseUrl('postgres://')).toThrow(/not a valid URL|expected postgres/);
    expect(() => assertDatabaseUrl('postgres://u:p@127.0.0.1:5432/x')).not.toThrow();
  });
});

describe('connecting with retries', () => {
  const policy = (log: string[], delays: number[]) => ({
    attempts: 4,
    firstDelayMs: 500,
    maxDelayMs: 1000,
    onRetry: (m: string) => log.push(m),
    sleep: async (ms: number) => void delays.push(ms),
  });

  it('retries transient failures with the delay in the log, then succeeds', async () => {
    const log: string[] = [];
    const delays: number[] = [];
    let calls = 0;
    const result = await connectWithRetry(
      'postgres://db/x',
      async () => {
        if (++calls < 4) throw err('connect ECONNREFUSED', 'ECONNREFUSED');
        return 'connected';
      },
      policy(log, delays),
    );
    expect(result).toBe('connected');
    expect(delays).toEqual([500, 1000, 1000]);
    expect(log).toHaveLength(3);
    expect(log[0]).toMatch(
      /not reachable: connect ECONNREFUSED \[ECONNREFUSED\]; retrying in 500 ms \(attempt 2 of 4\)/,
    );
  });

  it('fails at once, in one line, on a permanent failure', async () => {
    const log: string[] = [];
    let calls = 0;
    const failed = connectWithRetry(
      'postgres://u@db/x',
      async () => {
        calls++;
        throw err('password authentication failed for user "u"', '28P01');
      },
      policy(log, []),
    );
    await expect(failed).rejects.toThrow(DatabaseStartupError);
    await expect(failed).rejects.toThrow(
      /^Cannot connect to the database at postgres:\/\/u@db\/x: authentication failed .*\[28P01\] \(not retried: check DATABASE_URL\)$/,
    );
    expect(calls).toBe(1);
    expect(log).toEqual([]);
  });

  it('gives up after the last attempt and says how many there were', async () => {
    await expect(
      connectWithRetry(
        'postgres://db/x',
        async () => {
          throw err('the database system is starting up', '57P03');
        },
        policy([], []),
      ),
    ).rejects.toThrow(/gave up after 4 attempts/);
  });
});
