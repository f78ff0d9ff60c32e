/**
 * The one give-back rule of every budget (a key's windows and credits, an org's meters): what a
 * request took is given back only when the request is refused before its handler starts. A
 * refusal before the handler is a 400 (the input refused: a pipe's, or a check of the input
 * before any work), or any error status on a request a guard marked with `refuseBeforeHandler`
 * (a scope refusal after a controller-level budget, a host's guard listed after ours). A later
 * budget's own refusal (the meter after the key's credits) gives back at once, in SpendGuard.
 * Everything else, once the handler has started, is spent: an error status, a client that hangs up.
 */
const REFUSED = Symbol.for('kui.refusedBeforeHandler');

type Marked = { [REFUSED]?: true };

/** Marks the request as refused before its handler: call it just before throwing the refusal. */
export function refuseBeforeHandler(request: unknown): void {
  if (request && typeof request === 'object') (request as Marked)[REFUSED] = true;
}

/** True when what the request took goes back: see the rule above. */
export function refusedBeforeHandler(request: unknown, status: number): boolean {
  if (status === 400) return true;
  return status >= 400 && !!request && (request as Marked)[REFUSED] === true;
}
