import { describe, expect, it } from 'vitest';
import { bearerToken } from './http-utils.js';

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
