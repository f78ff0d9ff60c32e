import type { Plan, Role, Scope } from '../common/roles.js';
import type { KeyLimits } from '../common/key-limits.js';

/**
 * The one identity both credentials produce. Routes read it with `@CurrentPrincipal()`. `kind`:
 * a browser session, a personal API key, or `service`: a service key (an org's key, held by the
 * org's service account, `userId`), which is an API key in every other respect (`keyId` set).
 */
export interface Principal {
  kind: 'session' | 'api_key' | 'service';
  userId: string;
  email: string;
  /** The org the credential operates in; null for a session with no resolvable org. */
  orgId: string | null;
  orgRole: Role | null;
  orgMemberCount: number;
  plan: Plan | null;
  /** Effective scopes: a session's role ceiling, or a key's minted scopes within its owner's ceiling. */
  scopes: Scope[];
  /** API keys only. */
  keyId?: string;
  /**
   * API keys only: the key's metadata as its owner set it (never on GET /me), for host code.
   * Deep-frozen (shared with the verification cache): copy it to change it.
   */
  metadata?: Record<string, unknown> | null;
  /** API keys only: what the key's limits enforcement needs; absent when the key sets none. Deep-frozen. */
  limits?: KeyLimits | null;
  /** Sessions only: the org named by the `org_id` claim or the `X-Org-Id` header, before resolution. */
  requestedOrgId?: string | null;
}
