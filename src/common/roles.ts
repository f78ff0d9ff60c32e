export const SCOPES = ['decisions:read', 'decisions:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const PLANS = ['free', 'pro'] as const;
export type Plan = (typeof PLANS)[number];

const CEILING: Record<Role, readonly Scope[]> = {
  owner: SCOPES,
  admin: SCOPES,
  member: SCOPES,
  viewer: ['decisions:read'],
};

/** The scopes a role may hold in an org; a session carries exactly these. */
export function roleCeiling(role: Role | null | undefined): Scope[] {
  return role && role in CEILING ? [...CEILING[role]] : [];
}

/** A key's effective scopes: what it was minted with, cut down to its owner's current ceiling. */
export function effectiveScopes(minted: readonly string[], role: Role | null | undefined): Scope[] {
  const ceiling = roleCeiling(role);
  return SCOPES.filter((s) => minted.includes(s) && ceiling.includes(s));
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function isPlan(value: unknown): value is Plan {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value);
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_RE.test(value);
}
