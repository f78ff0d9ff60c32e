interface Waiter<V> {
  resolve: (value: V | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Coalesces the loads asked for during one event-loop turn into one call (one SQL statement),
 * so concurrent requests share a round trip. A key asked for while a load is in flight waits for
 * the next one: no answer is older than its request. Nothing is kept between loads, and a failed
 * load fails only the requests of its own batch.
 */
export class TurnBatcher<K, V> {
  private queue = new Map<string, { key: K; waiters: Array<Waiter<V>> }>();
  private scheduled = false;
  private inFlight = 0;

  /**
   * `maxInFlight` (default unbounded) caps the loads running at once: what arrives meanwhile
   * waits and goes into one larger load when one finishes (writes that queue on the same rows
   * anyway, like charges of one hot org, then take their locks once per load).
   */
  constructor(
    private readonly loadMany: (keys: K[]) => Promise<Map<string, V>>,
    private readonly idOf: (key: K) => string,
    private readonly maxInFlight = Number.POSITIVE_INFINITY,
  ) {}

  load(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const id = this.idOf(key);
      const entry = this.queue.get(id);
      if (entry) entry.waiters.push({ resolve, reject });
      else this.queue.set(id, { key, waiters: [{ resolve, reject }] });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.size === 0) return;
    this.scheduled = true;
    // setImmediate runs after the poll phase, so every request parsed in this turn is in.
    setImmediate(() => void this.run());
  }

  private async run(): Promise<void> {
    const batch = this.queue;
    this.queue = new Map();
    this.scheduled = false;
    this.inFlight++;
    try {
      const found = await this.loadMany([...batch.values()].map((e) => e.key));
      for (const [id, { waiters }] of batch) for (const w of waiters) w.resolve(found.get(id));
    } catch (error) {
      for (const { waiters } of batch.values()) for (const w of waiters) w.reject(error);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
