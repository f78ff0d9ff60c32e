import { describe, expect, it } from 'vitest';
import { bearerToken, isDatabaseUnavailable } from './http-utils.js';

describe('bearerToken', () => {
  it('answers each header value with its own token, however the calls interleave', () => {
    const a = { authorization: 'Bearer aaa' };
    const b = { authorization: 'bearer   bbb ' };
    const bad = { authorization: 'Basic xyz' };
    for (let i = 0; i < 3; i++) {
      expect(bearerToken(a)).toBe('aaa');
      expect(bearerToken(a)).toBe('aaa');
      expect(bearerToken(b)).toBe('bbb');
      expect(bearerToken(bad)).toBeNull();
      expect(bearerToken({})).toBeNull();
      expect(bearerToken({ authorization: 'Bearer a b' })).toBeNull();
    }
  });
});

describe('isDatabaseUnavailable', () => {
  it.each([
    ['the pool found no free connection in time', new Error('timeout exceeded when trying to connect')],
    ["a new connection's own connect timeout (pg's client)", new Error('timeout expired')],
    ['a statement that got no answer', new Error('Query read timeout')],
    ['a dropped connection', new Error('Connection terminated unexpectedly')],
    ['a server shutting down', Object.assign(new Error('terminating connection'), { code: '57P01' })],
  ])('is true for %s', (_label, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('is false for a bug', () => {
    expect(isDatabaseUnavailable(new TypeError('undefined is not a function'))).toBe(false);
  });
});

describe('isDatabaseUnavailable: a failover or a pooler losing its server is a 503, not a 500', () => {
  const err = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});
  it.each([
    ['PgBouncer: its server connection died mid-transaction', err('server conn crashed?', '08P01')],
    ['PgBouncer: no server to connect to', err('pgbouncer cannot connect to server', '08P01')],
    ['PgBouncer: waited too long for a server', err('query_wait_timeout', '08P01')],
    ['a standby answering (just after a switchover)', err('cannot execute INSERT in a read-only transaction', '25006')],
    ['the old primary shutting down', err('terminating connection due to administrator command', '57P01')],
    ['a connection cut without a word', err('Connection terminated unexpectedly')],
    ['through TypeORM', Object.assign(new Error('x'), { driverError: err('server conn crashed?', '08P01') })],
  ])('%s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('but not a bug', () => {
    expect(isDatabaseUnavailable(err('syntax error', '42601'))).toBe(false);
    expect(isDatabaseUnavailable(err('duplicate key', '23505'))).toBe(false);
  });
});
