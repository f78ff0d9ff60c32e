import type { INestApplicationContext } from '@nestjs/common';
import { KEY_STATES, type KeyState } from '../../api-keys/key-state.js';
import { command, int, need, ORG, scopes, UsageError, uuid, type Flags } from '../command-spec.js';

const RECORD = '{"id","org_id","name","lookup","last4","scopes","created_at",...,"owner","user_id"}';

type ServiceKeys = import('../../service-keys/service-keys.service.js').ServiceKeysService;

/**
 * A ServiceKeysService call as the operator: no such org or key exits 1 naming it; a refusal (the
 * org's key policy, a limit) exits 1 with the service's message; a cursor it did not return exits 2.
 */
async function asOperator<T>(
  app: INestApplicationContext,
  org: string,
  call: (svc: ServiceKeys) => Promise<T>,
  key?: string,
): Promise<T> {
  const [{ ServiceKeysService }, { BadRequestException, NotFoundException }, { AdminError }, { ERRORS }] =
    await Promise.all([
      import('../../service-keys/service-keys.service.js'),
      import('@nestjs/common'),
      import('../directory-admin.service.js'),
      import('../../common/error-messages.js'),
    ]);
  try {
    return await call(app.get(ServiceKeysService, { strict: false }));
  } catch (error) {
    if (error instanceof NotFoundException) {
      throw new AdminError(
        error.message === ERRORS.serviceKeyNotFound
          ? `no service key with id ${key} in org ${org}`
          : `no org with id ${org}`,
      );
    }
    if (error instanceof BadRequestException && error.message === ERRORS.notOurCursor('cursor'))
      throw new UsageError(`--${error.message}`);
    throw error;
  }
}

function state(f: Flags): KeyState | undefined {
  const v = f.state;
  if (v === undefined) return undefined;
  if (!(KEY_STATES as readonly string[]).includes(v))
    throw new UsageError(`--state must be one of ${KEY_STATES.join(', ')}, got "${v}"`);
  return v as KeyState;
}

/** Service keys (docs/service-keys.md): the org's own keys, as an owner manages them, the CLI named as actor. */
export const SERVICE_KEY_COMMANDS = {
  'service-key list': command({
    summary: "List an org's service keys, newest first, masked (one page; --cursor for the next).",
    flags: {
      org: ORG(),
      state: { value: KEY_STATES.join('|'), help: 'Only keys in this state.' },
      limit: { value: '<n>', help: 'Keys per page, 1 to 100 (default 100).' },
      cursor: { value: '<cursor>', help: 'The next_cursor of the page before.' },
    },
    prints: `{"keys":[${RECORD}],"next_cursor"?}`,
    args: (f) => ({
      org: uuid(f, 'org'),
      query: { state: state(f), limit: int(f, 'limit', 100, 1, 100), cursor: f.cursor },
    }),
    run: (_s, a, app) => asOperator(app, a.org, (svc) => svc.listAsOperator(a.org, a.query)),
  }),
  'service-key mint': command({
    summary:
      "Mint a service key for an org (scopes up to the owner's; the org's key policy applies). Prints the key once.",
    flags: {
      org: ORG(),
      name: { value: '<name>', help: 'Its label, at most 100 characters.', required: true },
      scopes: {
        value: '<scope,scope>',
        help: 'Registered scopes (decisions:read, decisions:write and API_KEY_SCOPES; default decisions:read).',
      },
      'expires-in-days': { value: '<n>', help: 'Days until it expires, 0 to 366 (default 0: never).' },
    },
    prints: `{"key",${RECORD.slice(1)}: the key is shown only here`,
    args: (f) => {
      const name = need(f, 'name');
      if (name.length > 100) throw new UsageError('--name must be at most 100 characters');
      return {
        org: uuid(f, 'org'),
        dto: { name, scopes: scopes(f, 'scopes'), expires_in_days: int(f, 'expires-in-days', 0, 0, 366) },
      };
    },
    run: (_s, a, app) => asOperator(app, a.org, (svc) => svc.mintAsOperator(a.org, a.dto)),
  }),
  'service-key revoke': command({
    summary:
      'Revoke a service key of an org: it stops verifying on every instance before this returns. Again: done, nothing changes.',
    flags: { org: ORG(), key: { value: '<key-id>', help: 'The service key (a UUID).', required: true } },
    prints: '{"id","org_id","revoked":true}',
    args: (f) => ({ org: uuid(f, 'org'), key: uuid(f, 'key') }),
    run: async (_s, a, app) => {
      await asOperator(app, a.org, (svc) => svc.revokeAsOperator(a.org, a.key), a.key);
      return { id: a.key, org_id: a.org, revoked: true };
    },
  }),
};
