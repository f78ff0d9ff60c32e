import type { DataSource } from 'typeorm';

/**
 * A database that runs in this process and hands its own notifications to listeners here (the
 * embedded PGlite, see embedded.ts): what the verification cache needs instead of a LISTEN
 * connection and a lease. Kept free of PGlite so the library, which reads it, never loads it.
 */
export interface InProcessNotifications {
  /** LISTENs on `channel`; the listener runs before the notifying commit is answered. Resolves to "stop listening". */
  listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>>;
}

const registered = new WeakMap<DataSource, InProcessNotifications>();

/** Called by openDatabase for a DataSource on the in-process database. */
export function registerInProcessNotifications(ds: DataSource, notifications: InProcessNotifications): void {
  registered.set(ds, notifications);
}

/** The in-process notifications of a DataSource's database, if it runs in this process. */
export function inProcessNotificationsOf(ds: DataSource): InProcessNotifications | undefined {
  return registered.get(ds);
}
