// The deployment's scopes as the forms offer them: GET /scopes (every registered scope, its
// description, and whether the caller's role may grant it), so a host's own registry shows. When
// that request fails the forms fall back to the scope enum of the deployment's OpenAPI document,
// grantable as far as the caller's own scopes (/me) reach, without descriptions.
import type { ScopeDescription } from '../../../../packages/client/src/types.js';
import { me, type PageContext } from '../context.js';
import { h, show } from '../dom.js';

/** One scope as a form offers it. */
export type ScopeChoice = ScopeDescription;

/** Ticked when a create form opens: the least a key can do. */
export const DEFAULT_SCOPES = ['decisions:read'];

export const scopeId = (prefix: string, scope: string) => `${prefix}-${scope.replace(/[^a-z0-9]+/gi, '-')}`;

/** The scopes the signed-in principal's forms offer: GET /scopes, else the document's enum (kept in the session). */
export async function loadScopeChoices(ctx: PageContext): Promise<ScopeChoice[]> {
  const principal = me(ctx);
  try {
    ctx.session.scopes = (await ctx.api.scopes({ orgId: principal.org_id })).scopes;
  } catch {
    ctx.session.scopes = ctx.doc.choices('MintApiKeyRequest', 'scopes').map((scope) => ({
      scope,
      description: '',
      grantable: principal.scopes.includes(scope),
    }));
  }
  return ctx.session.scopes;
}

/** Names as choices, each with its registry description where the session knows it, all grantable (the policy form). */
export const describedScopes = (ctx: PageContext, names: string[]): ScopeChoice[] =>
  names.map((scope) => ({
    scope,
    description: ctx.session.scopes.find((s) => s.scope === scope)?.description ?? '',
    grantable: true,
  }));

/** Checkboxes named `name`, one per choice with its description; those not grantable disabled and described by `reasonId`. */
export function scopeChecks(name: string, choices: readonly ScopeChoice[], reasonId: string): HTMLElement[] {
  return choices.map(({ scope, description, grantable }) =>
    h(
      'label',
      { class: 'check' },
      h('input', {
        type: 'checkbox',
        name,
        value: scope,
        id: scopeId(name, scope),
        disabled: !grantable,
        'aria-describedby': grantable || !reasonId ? null : reasonId,
      }),
      h(
        'span',
        {},
        h('code', { text: scope }),
        description ? ' ' : null,
        description ? h('span', { class: 'muted', text: description }) : null,
      ),
    ),
  );
}

/**
 * Fills a form's scopes: the choices into `container`, and into `reason` (shown only then) why the
 * ones the caller's role cannot grant are disabled.
 */
export function fillScopeChoices(
  ctx: PageContext,
  container: HTMLElement,
  reason: HTMLElement,
  name: string,
): HTMLInputElement[] {
  const choices = ctx.session.scopes;
  container.replaceChildren(...scopeChecks(name, choices, reason.id));
  const beyond = choices.filter((c) => !c.grantable).map((c) => c.scope);
  const within = choices.filter((c) => c.grantable).map((c) => c.scope);
  reason.textContent = beyond.length
    ? `Your role (${me(ctx).org_role ?? 'none'}) in this organisation cannot grant ${beyond.join(', ')}: your keys can have ${within.join(', ') || 'no scope'}. An owner or admin can change your role.`
    : '';
  show(reason, beyond.length > 0);
  return [...container.querySelectorAll<HTMLInputElement>(`input[name="${name}"]`)];
}

/** Ticks the default scopes among the enabled boxes, and only them. */
export function tickDefaults(boxes: Iterable<HTMLInputElement>): void {
  for (const box of boxes) box.checked = !box.disabled && DEFAULT_SCOPES.includes(box.value);
}
