import { describe, expect, it } from 'vitest';
import type { ExecutionContext } from '@nestjs/common';
import { RouteMemo } from './route-memo.js';

class A {
  one() {}
  two() {}
}
class B {
  one() {}
}
const ctx = (cls: object, handler: object) =>
  ({ getClass: () => cls, getHandler: () => handler }) as unknown as ExecutionContext;

describe('RouteMemo', () => {
  it('computes once per route (class and handler) and answers the same value after', () => {
    const calls: string[] = [];
    const memo = new RouteMemo((cls, handler) => {
      calls.push(`${cls.name}.${handler.name}`);
      return calls.length;
    });
    expect(memo.of(ctx(A, A.prototype.one))).toBe(1);
    expect(memo.of(ctx(A, A.prototype.two))).toBe(2);
    expect(memo.of(ctx(B, B.prototype.one))).toBe(3);
    expect(memo.of(ctx(A, A.prototype.one))).toBe(1);
    expect(memo.of(ctx(B, B.prototype.one))).toBe(3);
    expect(calls).toEqual(['A.one', 'A.two', 'B.one']);
  });
});
