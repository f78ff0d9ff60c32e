import { MAX_LIFETIME_DAYS, STALE_AFTER_DAYS } from '../../key-policies/key-policy-limits.js';
import { bool, command, daysOrNone, ORG, scopes, UsageError, uuid } from '../command-spec.js';

const PRINTS =
  '{"max_lifetime_days","require_expiry","stale_after_days","allowed_scopes_by_role","approval_required_for","updated_at"?}';

/** The org key policy (docs/key-policy.md), read and changed through the service PUT uses, as the operator. */
export const KEY_POLICY_COMMANDS = {
  'org key-policy': command({
    summary: "Print an org's key policy (null or false: no such rule).",
    flags: { org: ORG() },
    prints: PRINTS,
    args: (f) => ({ org: uuid(f, 'org') }),
    run: async (_s, a, app) => {
      const [{ KeyPoliciesService }, { AdminError }] = await Promise.all([
        import('../../key-policies/key-policies.service.js'),
        import('../directory-admin.service.js'),
      ]);
      const policy = await app.get(KeyPoliciesService, { strict: false }).getAsOperator(a.org);
      if (!policy) throw new AdminError(`no org with id ${a.org}`);
      return policy;
    },
  }),
  'org set-key-policy': command({
    summary:
      "Change rules of an org's key policy (the others stay as set); every instance applies it, and the keys it cuts short, before this returns.",
    flags: {
      org: ORG(),
      'max-lifetime-days': {
        value: `<${MAX_LIFETIME_DAYS.min}-${MAX_LIFETIME_DAYS.max}>|none`,
        help: 'Keys may live at most this many days (existing ones are cut to it); none: no limit.',
      },
      'require-expiry': { value: 'true|false', help: 'true: every mint must give an expiry.' },
      'stale-after-days': {
        value: `<${STALE_AFTER_DAYS.min}-${STALE_AFTER_DAYS.max}>|none`,
        help: 'Keys unused this long are revoked (warned 7 days before); none: never.',
      },
      'approval-required-for': {
        value: '<scope,scope>|none',
        help: "A member's or viewer's mint asking for these scopes (registered ones, e.g. decisions:write) waits for approval; none: no approval.",
      },
    },
    prints: PRINTS,
    args: (f) => {
      const approval = f['approval-required-for'] === 'none' ? null : scopes(f, 'approval-required-for');
      const given = {
        max_lifetime_days: daysOrNone(f, 'max-lifetime-days', MAX_LIFETIME_DAYS),
        require_expiry: bool(f, 'require-expiry'),
        stale_after_days: daysOrNone(f, 'stale-after-days', STALE_AFTER_DAYS),
        approval_required_for: approval,
      };
      const rules = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
      if (Object.keys(rules).length === 0)
        throw new UsageError(
          'give at least one of --max-lifetime-days, --require-expiry, --stale-after-days, --approval-required-for',
        );
      return { org: uuid(f, 'org'), rules };
    },
    run: async (_s, a, app) => {
      const [{ KeyPoliciesService }, { AdminError }] = await Promise.all([
        import('../../key-policies/key-policies.service.js'),
        import('../directory-admin.service.js'),
      ]);
      const policy = await app.get(KeyPoliciesService, { strict: false }).changeAsOperator(a.org, a.rules);
      if (!policy) throw new AdminError(`no org with id ${a.org}`);
      return policy;
    },
  }),
};
