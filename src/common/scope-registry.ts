import { BadRequestException, ForbiddenException } from '@nestjs/common';
import { ERRORS } from './error-messages.js';
import { ROLES, type Role } from './roles.js';
import { DEFAULT_SCOPE, parseScopeRegistry, type ScopeDefinition } from './scope-names.js';

export {
  CONTRACT_SCOPES,
  DEFAULT_SCOPE,
  isScopeName,
  MAX_SCOPE_LENGTH,
  MAX_SCOPES,
  parseScopeRegistry,
  type ScopeDefinition,
  type ScopeRegistryInput,
} from './scope-names.js';

/**
 * The scopes this deployment defines (the contract's two unless a host or API_KEY_SCOPES adds
 * more), and what follows from them: each role's ceiling, a key's effective scopes, what a mint
 * may grant. A scope that is not registered counts for nobody: a key that holds one keeps
 * verifying with the registered rest.
 */
export class ScopeRegistry {
  /** In registration order: the contract's two first, then the deployment's. */
  readonly names: readonly string[];
  private readonly definitions: ReadonlyMap<string, ScopeDefinition>;
  private readonly ceilings: ReadonlyMap<Role, readonly string[]>;
  private readonly ceilingSets: ReadonlyMap<Role, ReadonlySet<string>>;

  constructor(input?: unknown, source = 'scopes') {
    this.definitions = parseScopeRegistry(input, source);
    this.names = [...this.definitions.keys()];
    this.ceilings = new Map(
      ROLES.map((role) => [role, this.names.filter((s) => this.definitions.get(s)!.roles.includes(role))]),
    );
    this.ceilingSets = new Map(ROLES.map((role) => [role, new Set(this.ceilings.get(role))]));
  }

  has(scope: unknown): boolean {
    return typeof scope === 'string' && this.definitions.has(scope);
  }

  describe(scope: string): string {
    return this.definitions.get(scope)?.description ?? '';
  }

  /** The scopes a role may hold in an org; a session carries exactly these. */
  ceiling(role: Role | null | undefined): string[] {
    const c = role ? this.ceilings.get(role) : undefined;
    return c ? [...c] : [];
  }

  /** Whether `role` may hold `scope` (false for an unregistered scope). */
  allows(role: Role | null | undefined, scope: string): boolean {
    return !!role && !!this.ceilingSets.get(role)?.has(scope);
  }

  /**
   * A key's effective scopes: what it holds, cut down to its owner's current ceiling (so to the
   * registered scopes). On the verification path: no copy of the ceiling, one filter.
   */
  effective(held: readonly string[], role: Role | null | undefined): string[] {
    const set = role ? this.ceilingSets.get(role) : undefined;
    return set ? held.filter((s) => set.has(s)) : [];
  }

  /** The first entry of `list` that is not a registered scope, if any. */
  unregistered(list: readonly unknown[]): unknown {
    return list.find((s) => !this.has(s));
  }

  /** 400 naming the field and the first entry that is not a registered scope. */
  requireRegistered(field: string, list: readonly unknown[] | null | undefined): void {
    if (!list) return;
    const bad = list.find((s) => !this.has(s));
    if (bad !== undefined || list.some((s) => s === undefined)) {
      throw new BadRequestException(ERRORS.unregisteredScope(field, bad, this.names));
    }
  }

  /** `list` without duplicates, in registration order. */
  canonical(list: readonly string[]): string[] {
    const wanted = new Set(list);
    return this.names.filter((s) => wanted.has(s));
  }

  /**
   * The scopes a key asked for, as a role may grant them: omitted or [] means read-only,
   * duplicates collapse, registration order; an unregistered scope is a 400 naming it, a scope
   * above the role's ceiling a 403 naming both.
   */
  grantable(asked: readonly string[] | undefined, role: Role): string[] {
    this.requireRegistered('scopes', asked);
    const scopes = this.canonical(asked && asked.length > 0 ? asked : [DEFAULT_SCOPE]);
    const above = scopes.filter((s) => !this.allows(role, s));
    if (above.length > 0) throw new ForbiddenException(ERRORS.roleCannotGrant(role, above, this.ceiling(role)));
    return scopes;
  }
}
