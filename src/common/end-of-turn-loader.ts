import DataLoader from 'dataloader';

/**
 * The one per-tick batcher of this code base: a `dataloader` that dispatches its batch at the end
 * of the event-loop turn (setImmediate runs after the poll phase, so every request parsed in the
 * turn is in it) and runs at most `maxInFlight` batches at once: what arrives meanwhile goes as
 * one larger batch when one finishes (writes that would queue on the same row lock anyway, like
 * the charges of a hot org or one user's mints, then take it once per batch). That batch leaves
 * the moment one finishes, before the finished batch's callers go on to write their responses:
 * the database works on it while this process answers them (measured on the charging bench).
 * Nothing is cached: every load is answered by the batch it went out in, and a failed batch
 * fails only its own loads. One item's bad value never fails the others: when PostgreSQL refuses
 * a batch with an SQLSTATE of class 22 (data exception) or 23 (integrity constraint), the items
 * are tried again one by one, so only the offending item fails (`load` must be atomic: a refused
 * batch wrote nothing, as one statement or one transaction).
 */
export function endOfTurnLoader<K, V>(
  load: (keys: readonly K[]) => Promise<V[]>,
  maxInFlight = Number.POSITIVE_INFINITY,
): DataLoader<K, V> {
  let running = 0;
  let waiting: (() => void) | null = null;
  return new DataLoader<K, V>(
    async (keys) => {
      running++;
      try {
        try {
          return await load(keys);
        } catch (error) {
          if (keys.length < 2 || !isDataError(error)) throw error;
          return await oneByOne(load, keys);
        }
      } finally {
        running--;
        const next = waiting;
        waiting = null;
        if (next) next();
      }
    },
    {
      cache: false,
      // DataLoader starts a new batch only once the previous one is dispatched: at most one waits.
      batchScheduleFn: (dispatch) => {
        if (running >= maxInFlight) waiting = dispatch;
        else setImmediate(dispatch);
      },
    },
  );
}

/** SQLSTATE class 22 (data exception) or 23 (integrity constraint violation): one value's fault. */
export function isDataError(error: unknown): boolean {
  const code =
    (error as { code?: unknown; driverError?: { code?: unknown } } | null)?.code ??
    (error as { driverError?: { code?: unknown } } | null)?.driverError?.code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}

/** Each item alone, in order: the ones PostgreSQL refuses answer their own error, the others their value. */
async function oneByOne<K, V>(load: (keys: readonly K[]) => Promise<V[]>, keys: readonly K[]): Promise<(V | Error)[]> {
  const out: (V | Error)[] = [];
  for (const key of keys) {
    try {
      out.push((await load([key]))[0]);
    } catch (error) {
      out.push(error instanceof Error ? error : new Error(String(error)));
    }
  }
  return out;
}
