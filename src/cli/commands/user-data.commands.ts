import { command, Streamed, USER, uuid } from '../command-spec.js';

/** A person's data on request: their export and their erasure (GDPR articles 15, 17 and 20). */
export const USER_DATA_COMMANDS = {
  'user export': command({
    summary: 'Print everything the service holds about a user as one JSON document (keys masked; streamed).',
    flags: { user: USER() },
    prints:
      '{"exported_at","user","memberships","workspaces","api_keys","audit_events","usage_attribution","usage_meters"}',
    args: (f) => ({ user: uuid(f, 'user') }),
    run: async (_s, a, app) => {
      const { PersonalDataService } = await import('../../personal-data/personal-data.service.js');
      const pieces = await operatorErrors(() => app.get(PersonalDataService).exportDocument(a.user));
      return new Streamed(async (write) => {
        for await (const piece of pieces) await write(piece);
      });
    },
  }),
  'user erase': command({
    summary:
      'Erase a user: revoke their keys, remove their memberships, pseudonymise them in the audit log, tombstone the e-mail. Idempotent; run again to complete an interrupted one.',
    flags: { user: USER() },
    prints: '{"user_id","email","keys_revoked","orgs_left","audit_events_pseudonymised"}',
    args: (f) => ({ user: uuid(f, 'user') }),
    run: async (_s, a, app) => {
      const [{ PersonalDataService }, { OPERATOR }] = await Promise.all([
        import('../../personal-data/personal-data.service.js'),
        import('../../audit/audit.service.js'),
      ]);
      return operatorErrors(() => app.get(PersonalDataService).erase(a.user, OPERATOR.actor));
    },
  }),
};

/** The service's refusals (no such user, no API_KEY_SECRET) as the CLI's own: exit 1 with the message. */
async function operatorErrors<T>(work: () => Promise<T>): Promise<T> {
  const [{ HttpException }, { AdminError }] = await Promise.all([
    import('@nestjs/common'),
    import('../directory-admin.service.js'),
  ]);
  try {
    return await work();
  } catch (error) {
    if (error instanceof HttpException) throw new AdminError(error.message);
    throw error;
  }
}
