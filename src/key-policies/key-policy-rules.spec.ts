import { BadRequestException, ForbiddenException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import type { OrgKeyPolicyEntity } from './key-policy.entity.js';
import type { KeyPolicyRepository } from './key-policy.repository.js';
import { KeyPolicyRules } from './key-policy-rules.js';

const ORG = '11111111-1111-4111-8111-111111111111';
const policy = (p: Partial<OrgKeyPolicyEntity>): OrgKeyPolicyEntity => ({
  orgId: ORG,
  maxLifetimeDays: null,
  requireExpiry: false,
  staleAfterDays: null,
  allowedScopesByRole: null,
  approvalRequiredFor: null,
  updatedAt: new Date(0),
  updatedBy: null,
  ...p,
});
const rules = (p: OrgKeyPolicyEntity | null) =>
  new KeyPolicyRules({ find: async () => p } as Pick<KeyPolicyRepository, 'find'> as KeyPolicyRepository);
const mint = (
  role: 'owner' | 'admin' | 'member' | 'viewer',
  scopes: Array<'decisions:read' | 'decisions:write'>,
  expiresInDays = 0,
) => ({ orgId: ORG, role, scopes, expiresInDays });

describe('KeyPolicyRules, the org key policy as the key feature asks it', () => {
  it('allows everything and holds nothing for an org without a policy', async () => {
    await expect(rules(null).judgeMint(mint('member', ['decisions:write']))).resolves.toEqual({ pending: false });
    await expect(rules(null).judgeRotation(ORG, null)).resolves.toBeUndefined();
  });

  it('refuses no expiry and an expiry beyond the lifetime limit with a 400 naming the policy; allows the limit itself', async () => {
    const r = rules(policy({ maxLifetimeDays: 30 }));
    await expect(r.judgeMint(mint('owner', ['decisions:read']))).rejects.toThrow(BadRequestException);
    await expect(r.judgeMint(mint('owner', ['decisions:read'], 31))).rejects.toThrow(/max_lifetime_days/);
    await expect(r.judgeMint(mint('owner', ['decisions:read'], 30))).resolves.toEqual({ pending: false });
    await expect(r.judgeRotation(ORG, null)).rejects.toThrow(BadRequestException);
    await expect(r.judgeRotation(ORG, new Date())).resolves.toBeUndefined();
  });

  it('requires an expiry when require_expiry is set', async () => {
    await expect(rules(policy({ requireExpiry: true })).judgeMint(mint('member', ['decisions:read']))).rejects.toThrow(
      /require_expiry/,
    );
  });

  it('narrows the scopes a role may grant (403), leaving roles it does not name at their ceiling', async () => {
    const r = rules(policy({ allowedScopesByRole: { member: ['decisions:read'] } }));
    await expect(r.judgeMint(mint('member', ['decisions:read', 'decisions:write'], 0))).rejects.toThrow(
      ForbiddenException,
    );
    await expect(r.judgeMint(mint('admin', ['decisions:read', 'decisions:write']))).resolves.toEqual({
      pending: false,
    });
  });

  it("holds a member's or viewer's mint asking for a listed scope, never an owner's or admin's", async () => {
    const r = rules(policy({ approvalRequiredFor: ['decisions:write'] }));
    await expect(r.judgeMint(mint('member', ['decisions:read', 'decisions:write']))).resolves.toEqual({
      pending: true,
    });
    await expect(r.judgeMint(mint('member', ['decisions:read']))).resolves.toEqual({ pending: false });
    await expect(r.judgeMint(mint('admin', ['decisions:write']))).resolves.toEqual({ pending: false });
    await expect(r.judgeMint(mint('owner', ['decisions:write']))).resolves.toEqual({ pending: false });
  });
});
