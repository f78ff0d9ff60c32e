import { SETTING_FIELDS } from '../../api-keys/key-settings.sql.js';
import { bool, command, UsageError, uuid, type Flags } from '../command-spec.js';

const flagOf = (field: string) => field.replaceAll('_', '-');

/** A JSON flag: `null` clears the setting; the API's rule checks the value (see run). */
function jsonFlag(f: Flags, name: string): unknown {
  const raw = f[name];
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new UsageError(`--${name} must be JSON (or null to clear it)`);
  }
}

const VALUE = { text: '<text>', boolean: 'true|false', json: '<json>' } as const;

/** API keys: their settings, as the owner's PATCH changes them, for an operator. */
export const KEY_COMMANDS = {
  'key update': command({
    summary:
      "Change a key's settings (the fields of PATCH /api-keys/{id}, under the same rules); every instance applies it before this returns.",
    flags: {
      key: { value: '<key-id>', help: 'The key (a UUID).', required: true },
      ...Object.fromEntries(SETTING_FIELDS.map((s) => [flagOf(s.field), { value: VALUE[s.flag], help: s.help }])),
    },
    prints: 'the key record: {"id","org_id","name","lookup","last4","scopes","created_at",...settings}',
    args: (f) => {
      const dto: Record<string, unknown> = {};
      for (const { field, flag } of SETTING_FIELDS) {
        const name = flagOf(field);
        const value = flag === 'json' ? jsonFlag(f, name) : flag === 'boolean' ? bool(f, name) : f[name];
        if (value !== undefined) dto[field] = value;
      }
      if (Object.keys(dto).length === 0)
        throw new UsageError(`give at least one of ${SETTING_FIELDS.map((s) => `--${flagOf(s.field)}`).join(', ')}`);
      return { key: uuid(f, 'key'), dto };
    },
    run: async (_s, a, app) => {
      const [
        { KeySettingsService },
        { BadRequestException, NotFoundException },
        { AdminError },
        { StrictBodyPipe },
        dtos,
      ] = await Promise.all([
        import('../../api-keys/key-settings.service.js'),
        import('@nestjs/common'),
        import('../directory-admin.service.js'),
        import('../../common/validation.js'),
        import('../../api-keys/dto/update-api-key.dto.js'),
      ]);
      try {
        // The PATCH body's own rules, so the CLI refuses what the API refuses, in the same words (as flags).
        const dto = (await new StrictBodyPipe(dtos.UpdateApiKeyDto).transform(a.dto, { type: 'body' })) as typeof a.dto;
        return await app.get(KeySettingsService, { strict: false }).updateAsOperator(a.key, dto);
      } catch (error) {
        if (error instanceof NotFoundException) throw new AdminError(`no key with id ${a.key}`);
        if (error instanceof BadRequestException)
          throw new UsageError(error.message.replace(/\b[a-z]+(_[a-z]+)*/, (field) => `--${flagOf(field)}`));
        throw error;
      }
    },
  }),
};
