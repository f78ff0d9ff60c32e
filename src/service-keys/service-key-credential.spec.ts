import { describe, expect, it } from 'vitest';
import { testPrincipal } from '../../test/support/principal.js';
import { actorOf } from '../audit/audit.service.js';
import { attributionOf } from '../usage/usage.service.js';

/** A service key (principal kind `service`) is an API key as a credential: for the audit log and for usage attribution. */
describe('a service key as a credential', () => {
  const service = testPrincipal({ kind: 'service', keyId: 'c0ffee00-0000-4000-8000-000000000001' });

  it('is recorded in the audit log as the API key it is', () => {
    expect(actorOf(service)).toEqual({
      actor: { type: 'user', id: service.userId },
      credential: { type: 'api_key', id: service.keyId },
    });
  });

  it('charges usage to the key, not to its service account as if it were a session', () => {
    expect(attributionOf(service)).toEqual({ kind: 'api_key', credentialId: service.keyId, userId: service.userId });
  });
});
