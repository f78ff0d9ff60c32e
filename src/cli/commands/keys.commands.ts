import { allowedCidrsProblem, creditsProblem, metadataProblem, rateLimitsProblem } from '../../budgets/key-settings.js';
import { bool, command, UsageError, uuid, type Flags } from '../command-spec.js';

/** A JSON flag checked by the same rule as the API's field; `null` clears the setting. */
function jsonFlag(f: Flags, name: string, problem: (value: unknown) => string | null): unknown {
  const raw = f[name];
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new UsageError(`--${name} must be JSON (or null to clear it)`);
  }
  if (value === null) return null;
  const message = problem(value);
  if (message) throw new UsageError(`--${message.replace(/^[a-z_]+/, name)}`);
  return value;
}

/** API keys: their settings, as the owner's PATCH changes them, for an operator. */
export const KEY_COMMANDS = {
  'key update': command({
    summary:
      "Change a key's settings (enabled, name, rate limits, credits, networks, metadata); every instance applies it before this returns.",
    flags: {
      key: { value: '<key-id>', help: 'The key (a UUID).', required: true },
      name: { value: '<name>', help: 'Its label, at most 100 characters.' },
      enabled: { value: 'true|false', help: 'false: the key answers 401 until enabled again.' },
      'rate-limits': {
        value: '<json>',
        help: 'Windows, e.g. [{"name":"default","limit":10,"window_seconds":1}]; null clears them.',
      },
      credits: {
        value: '<json>',
        help: 'e.g. {"remaining":1000,"refill":{"amount":1000,"interval":"monthly","day_of_month":1}}; null removes credits.',
      },
      'allowed-cidrs': { value: '<json>', help: 'e.g. ["203.0.113.0/24"]; null: anywhere.' },
      metadata: { value: '<json>', help: 'A JSON object of at most 1 KB and 4 levels; null clears it.' },
    },
    prints: 'the key record: {"id","org_id","name","lookup","last4","scopes","created_at",...settings}',
    args: (f) => {
      const dto: Record<string, unknown> = {};
      if (f.name !== undefined) {
        if (f.name.length > 100) throw new UsageError('--name must be at most 100 characters');
        dto.name = f.name;
      }
      const enabled = bool(f, 'enabled');
      if (enabled !== undefined) dto.enabled = enabled;
      const settings: Array<[string, string, (v: unknown) => string | null]> = [
        ['rate-limits', 'rate_limits', rateLimitsProblem],
        ['credits', 'credits', creditsProblem],
        ['allowed-cidrs', 'allowed_cidrs', allowedCidrsProblem],
        ['metadata', 'metadata', metadataProblem],
      ];
      for (const [flag, field, problem] of settings) {
        const value = jsonFlag(f, flag, problem);
        if (value !== undefined) dto[field] = value;
      }
      if (Object.keys(dto).length === 0)
        throw new UsageError(
          'give at least one of --name, --enabled, --rate-limits, --credits, --allowed-cidrs, --metadata',
        );
      return { key: uuid(f, 'key'), dto };
    },
    run: async (_s, a, app) => {
      const [{ KeySettingsService }, { NotFoundException }, { AdminError }] = await Promise.all([
        import('../../api-keys/key-settings.service.js'),
        import('@nestjs/common'),
        import('../directory-admin.service.js'),
      ]);
      try {
        return await app.get(KeySettingsService, { strict: false }).updateAsOperator(a.key, a.dto);
      } catch (error) {
        if (error instanceof NotFoundException) throw new AdminError(`no key with id ${a.key}`);
        throw error;
      }
    },
  }),
};
