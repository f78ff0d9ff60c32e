import { ROLES, type Role } from './roles.js';

/*
 * The scope registry's shape and its parsing, with no framework import: the operator CLI checks
 * `--scopes` with it before loading Nest. The registry itself is ScopeRegistry (scope-registry.ts).
 */

/** A scope as the deployment defines it: what it lets a key do, and which roles may hold it. */
export interface ScopeDefinition {
  description: string;
  roles: Role[];
}

/** What a host passes as the module's `scopes` option, or the server reads from API_KEY_SCOPES. */
export type ScopeRegistryInput = Record<string, { description?: string; roles?: Role[] }>;

/** The contract's two scopes, always registered; a registry may redefine their roles and description. */
export const CONTRACT_SCOPES: Readonly<Record<'decisions:read' | 'decisions:write', ScopeDefinition>> = {
  'decisions:read': { description: 'Read decisions.', roles: ['owner', 'admin', 'member', 'viewer'] },
  'decisions:write': { description: 'Write decisions.', roles: ['owner', 'admin', 'member'] },
};

/** The scope a key gets when its mint names none (the contract's "read-only"). */
export const DEFAULT_SCOPE = 'decisions:read';

export const MAX_SCOPES = 200;
export const MAX_SCOPE_LENGTH = 64;
const MAX_DESCRIPTION_LENGTH = 500;
/** `resource:action` style: lower case letters, digits, `_` and `-`, in parts joined by `:` (at least two parts). */
const SCOPE_NAME = /^[a-z0-9_-]+(?::[a-z0-9_-]+)+$/;
const NAME_RULE = `lower case letters, digits, "_" and "-" in parts joined by ":" (at least one ":"), at most ${MAX_SCOPE_LENGTH} characters`;

/** True for a string shaped like a scope name (registered or not). */
export function isScopeName(value: unknown): boolean {
  return typeof value === 'string' && value.length <= MAX_SCOPE_LENGTH && SCOPE_NAME.test(value);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads a registry from untrusted input (JSON or module options); the contract's two scopes are
 * added unless named. Anything malformed throws one line naming `source` and the offending entry.
 */
export function parseScopeRegistry(input: unknown, source: string): Map<string, ScopeDefinition> {
  const registry = new Map<string, ScopeDefinition>(
    Object.entries(CONTRACT_SCOPES).map(([name, d]) => [name, { description: d.description, roles: [...d.roles] }]),
  );
  if (input === undefined || input === null) return registry;
  if (!isObject(input)) {
    throw new Error(`${source} must be an object like {"invoices:read":{"description":"…","roles":["owner"]}}`);
  }
  const entries = Object.entries(input);
  if (entries.length > MAX_SCOPES) throw new Error(`${source}: at most ${MAX_SCOPES} scopes, got ${entries.length}`);
  for (const [name, entry] of entries) {
    const at = `${source}["${name}"]`;
    if (!isScopeName(name)) throw new Error(`${source}: "${name}" is not a scope name (${NAME_RULE})`);
    if (!isObject(entry)) throw new Error(`${at} must be an object with a description and roles`);
    const unknown = Object.keys(entry).find((k) => k !== 'description' && k !== 'roles');
    if (unknown !== undefined) throw new Error(`${at}: unknown field "${unknown}" (allowed: description, roles)`);
    const contract = CONTRACT_SCOPES[name as keyof typeof CONTRACT_SCOPES] as ScopeDefinition | undefined;
    const { description = contract?.description, roles = contract?.roles } = entry as {
      description?: unknown;
      roles?: unknown;
    };
    if (typeof description !== 'string' || description.length === 0 || description.length > MAX_DESCRIPTION_LENGTH) {
      throw new Error(`${at}.description must be a string of 1 to ${MAX_DESCRIPTION_LENGTH} characters`);
    }
    if (!Array.isArray(roles) || roles.length === 0) {
      throw new Error(`${at}.roles must be a non-empty array of roles (${ROLES.join(', ')})`);
    }
    const badRole: unknown = (roles as unknown[]).find((r) => !(ROLES as readonly unknown[]).includes(r));
    if (badRole !== undefined) {
      throw new Error(`${at}.roles: unknown role ${JSON.stringify(badRole)} (allowed: ${ROLES.join(', ')})`);
    }
    registry.set(name, { description, roles: ROLES.filter((r) => (roles as unknown[]).includes(r)) });
  }
  return registry;
}
