// Member e-mails by user id, to name who minted a key or acted in the audit log.
import { me, type PageContext } from '../context.js';
import { handledElsewhere } from '../errors.js';

export async function loadMembers(ctx: PageContext): Promise<void> {
  ctx.session.members = new Map();
  try {
    const data = await ctx.api.orgs.members(me(ctx).org_id, { limit: 100 });
    for (const m of data.members) if (m.user_id && m.email) ctx.session.members.set(m.user_id, m.email);
  } catch (err) {
    if (!handledElsewhere(err)) ctx.session.members = new Map();
  }
}
