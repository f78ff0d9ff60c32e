import { describe, expect, it } from 'vitest';
import { decodeSessionToken } from './session-keys.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const token = (header: unknown, payload: unknown) => `${b64(header)}.${b64(payload)}.c2ln`;

describe('decodeSessionToken', () => {
  it('decodes a JWT whose header and payload are JSON objects', () => {
    expect(decodeSessionToken(token({ alg: 'HS256', typ: 'JWT' }, { sub: 'x' }))?.payload).toEqual({ sub: 'x' });
  });

  it.each([
    ['a header that is a JSON string', token(' ', {})],
    ['a header that is a JSON array', token(['alg'], {})],
    ['a payload that is null', token({ alg: 'HS256' }, null)],
    ['a payload that is an array', token({ alg: 'HS256' }, [1])],
    ['a crit header', token({ alg: 'HS256', crit: ['exp'] }, {})],
    ['no JWT at all', 'not-a-jwt'],
  ])('answers null, never throws, for %s', (_name, value) => {
    expect(decodeSessionToken(value)).toBeNull();
  });
});
