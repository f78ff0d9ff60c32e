/**
 * Acknowledgements announced to this process (any instance's, or a lapse of its own lease), for
 * writers waiting on them: they re-check on the next announcement rather than on a timer.
 */
export class Announcements {
  private count = 0;
  private readonly waiters = new Set<() => void>();

  /** How many have been announced since start. */
  get seen(): number {
    return this.count;
  }

  /**
   * Resolves once an announcement beyond `seen` (a value of `seen` read *before* the check that
   * found something pending) has been made, or after `ms`.
   */
  after(seen: number, ms: number): Promise<void> {
    if (this.count > seen) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  announce(): void {
    this.count++;
    this.wakeAll();
  }

  /** Lets every waiter go on (at shutdown). */
  wakeAll(): void {
    for (const w of [...this.waiters]) w();
  }
}
