import type { EventOutbox } from '../events/event-outbox.js';
import type { VerificationInvalidation } from './verification-invalidation.js';

/**
 * The one tail of a committed change to keys or the directory (KeyChanges, the operator CLI's
 * directory changes, a person's erasure): the outbox relay is woken when the change wrote events,
 * and a change a cached verification could depend on (a revoke, a rotation, a role, a plan, a
 * membership, an org's API version) waits until every instance answering from its cache has
 * applied it, so the answer means "applied everywhere".
 */
export async function afterCommit(
  outbox: Pick<EventOutbox, 'written'>,
  invalidation: Pick<VerificationInvalidation, 'awaitAcknowledged'>,
  change: { wroteEvents: boolean; narrows: boolean },
): Promise<void> {
  if (change.wroteEvents) outbox.written();
  if (change.narrows) await invalidation.awaitAcknowledged();
}
