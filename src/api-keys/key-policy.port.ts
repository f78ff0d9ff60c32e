import type { Role, Scope } from '../common/roles.js';

/** A mint as the org's key policy judges it. */
export interface PolicyMintRequest {
  orgId: string;
  /** The minting user's role in the org. */
  role: Role;
  scopes: readonly Scope[];
  /** 0: no expiry. */
  expiresInDays: number;
}

/**
 * What the key feature asks of the org's key policy (src/key-policies implements it, the root
 * module binds it), so that api-keys never imports the policy feature. Each judgement throws the
 * 400 or 403 the policy gives, naming the policy; an org without a policy allows everything.
 */
export abstract class KeyPolicyPort {
  /** Resolves to whether the key waits for an owner's or admin's approval (`pending`). */
  abstract judgeMint(request: PolicyMintRequest): Promise<{ pending: boolean }>;
  /** A rotation keeps the key's expiry (null: none); refused when the policy requires one it lacks. */
  abstract judgeRotation(orgId: string, expiresAt: Date | null): Promise<void>;
}
