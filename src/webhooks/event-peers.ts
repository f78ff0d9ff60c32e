import type { PgBoss } from 'pg-boss';
import type { Webhook } from 'standardwebhooks';

/**
 * pg-boss and standardwebhooks are optional peer dependencies of the library: a host installs
 * them only if it imports EventsModule. They are loaded here, on first use, so a host without
 * events never loads them and a host with events but without them stops at start with this message.
 */
export interface EventPeers {
  PgBoss: typeof PgBoss;
  Webhook: typeof Webhook;
}

let loading: Promise<EventPeers> | null = null;

export function loadEventPeers(): Promise<EventPeers> {
  loading ??= Promise.all([import('pg-boss'), import('standardwebhooks')]).then(
    ([boss, webhooks]) => ({ PgBoss: boss.PgBoss, Webhook: webhooks.Webhook }),
    (error: NodeJS.ErrnoException) => {
      loading = null;
      if (error.code !== 'ERR_MODULE_NOT_FOUND') throw error;
      throw new Error(
        `EventsModule needs its optional peer dependencies: npm install pg-boss standardwebhooks (${error.message})`,
      );
    },
  );
  return loading;
}
