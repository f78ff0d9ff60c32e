import { BadRequestException, ForbiddenException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { parseScopeRegistry, ScopeRegistry } from './scope-registry.js';

const INVOICES = {
  'invoices:read': { description: 'Read invoices', roles: ['owner', 'admin', 'member', 'viewer'] },
  'invoices:write': { description: 'Write invoices', roles: ['owner', 'admin'] },
};

describe('ScopeRegistry', () => {
  it("holds the contract's two scopes with today's roles when nothing is configured", () => {
    const r = new ScopeRegistry();
    expect(r.names).toEqual(['decisions:read', 'decisions:write']);
    expect(r.ceiling('viewer')).toEqual(['decisions:read']);
    expect(r.ceiling('member')).toEqual(['decisions:read', 'decisions:write']);
    expect(r.ceiling(null)).toEqual([]);
  });

  it("adds the deployment's scopes after the contract's, each role's ceiling from their roles", () => {
    const r = new ScopeRegistry(INVOICES);
    expect(r.names).toEqual(['decisions:read', 'decisions:write', 'invoices:read', 'invoices:write']);
    expect(r.ceiling('member')).toEqual(['decisions:read', 'decisions:write', 'invoices:read']);
    expect(r.ceiling('admin')).toContain('invoices:write');
    expect(r.describe('invoices:read')).toBe('Read invoices');
  });

  it("lets the registry redefine a contract scope's roles, keeping its description", () => {
    const r = new ScopeRegistry({ 'decisions:write': { roles: ['owner'] } });
    expect(r.ceiling('member')).toEqual(['decisions:read']);
    expect(r.describe('decisions:write')).toBe('Write decisions.');
  });

  it('cuts a key down to the registered scopes its owner may hold now (a scope that left the registry counts for nothing)', () => {
    const r = new ScopeRegistry(INVOICES);
    expect(r.effective(['decisions:read', 'invoices:write', 'gone:scope'], 'admin')).toEqual([
      'decisions:read',
      'invoices:write',
    ]);
    expect(r.effective(['decisions:read', 'invoices:write'], 'member')).toEqual(['decisions:read']);
    expect(r.effective(['decisions:read'], null)).toEqual([]);
  });

  it('grants read-only for omitted or empty scopes, in registry order without duplicates', () => {
    const r = new ScopeRegistry(INVOICES);
    expect(r.grantable(undefined, 'viewer')).toEqual(['decisions:read']);
    expect(r.grantable([], 'viewer')).toEqual(['decisions:read']);
    expect(r.grantable(['invoices:read', 'decisions:read', 'invoices:read'], 'member')).toEqual([
      'decisions:read',
      'invoices:read',
    ]);
  });

  it('refuses an unregistered scope with a 400 naming it, and one above the role with a 403', () => {
    const r = new ScopeRegistry(INVOICES);
    expect(() => r.grantable(['invoices:delete'], 'owner')).toThrow(BadRequestException);
    expect(() => r.grantable(['invoices:delete'], 'owner')).toThrow(/scopes may only contain .*"invoices:delete"/);
    expect(() => r.grantable([7 as unknown as string], 'owner')).toThrow(BadRequestException);
    expect(() => r.grantable(['invoices:write'], 'member')).toThrow(ForbiddenException);
  });

  it.each([
    ['not an object', [1], /^scopes must be an object/],
    [
      'a name without ":"',
      { invoices: { description: 'x', roles: ['owner'] } },
      /^scopes: "invoices" is not a scope name/,
    ],
    ['upper case', { 'Invoices:read': { description: 'x', roles: ['owner'] } }, /"Invoices:read" is not a scope name/],
    ['an empty part', { 'invoices:': { description: 'x', roles: ['owner'] } }, /"invoices:" is not a scope name/],
    ['over 64 characters', { [`a:${'b'.repeat(63)}`]: { description: 'x', roles: ['owner'] } }, /is not a scope name/],
    [
      'an unknown role',
      { 'a:b': { description: 'x', roles: ['boss'] } },
      /scopes\["a:b"\]\.roles: unknown role "boss"/,
    ],
    ['no roles', { 'a:b': { description: 'x' } }, /scopes\["a:b"\]\.roles must be a non-empty array/],
    ['no description', { 'a:b': { roles: ['owner'] } }, /scopes\["a:b"\]\.description must be a string/],
    ['an unknown field', { 'a:b': { description: 'x', roles: ['owner'], extra: 1 } }, /unknown field "extra"/],
    ['an entry that is not an object', { 'a:b': 'x' }, /scopes\["a:b"\] must be an object/],
  ])('refuses a registry with %s, in one line naming the source and the entry', (_, input, message) => {
    expect(() => parseScopeRegistry(input, 'scopes')).toThrow(message);
    try {
      parseScopeRegistry(input, 'scopes');
    } catch (error) {
      expect((error as Error).message).not.toContain('\n');
    }
  });

  it('refuses more than 200 scopes', () => {
    const many = Object.fromEntries(
      Array.from({ length: 201 }, (_, i) => [`s:${i}`, { description: 'x', roles: ['owner'] }]),
    );
    expect(() => parseScopeRegistry(many, 'API_KEY_SCOPES')).toThrow(/API_KEY_SCOPES: at most 200 scopes, got 201/);
  });
});
