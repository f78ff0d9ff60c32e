/**
 * The org's people: its members that are not service accounts (users of kind `service`, which
 * hold an org's service keys). `org_member_count` counts these; `org` is an SQL expression.
 */
export const orgPeopleCountSql = (org: string): string =>
  `(SELECT count(*)::int FROM memberships c JOIN users cu ON cu.id = c.user_id WHERE c.org_id = ${org} AND cu.kind = 'person')`;
