// What the requests with every key of the org were decided, by outcome (GET /orgs/{org_id}/verifications),
// above the org's key list (owners and admins), where the deployment has the route.
import { me, type PageContext } from '../context.js';
import { byId, show } from '../dom.js';
import { loadVerifications } from '../usage/verifications.js';

export function loadOrgVerifications(ctx: PageContext): Promise<void> {
  const slot = byId('org-verifications');
  const available = ctx.doc.hasRoute('get', '/orgs/{org_id}/verifications');
  show(slot, available);
  if (!available) return Promise.resolve();
  return loadVerifications(
    {
      id: 'verifications-org',
      subject: 'every key of the organisation',
      fetch: (query) => ctx.api.orgs.verifications(me(ctx).org_id, query),
    },
    slot,
  );
}
