import { describe, expect, it } from 'vitest';
import { RefundsInFlight } from './refunds-in-flight.js';

describe('RefundsInFlight', () => {
  it('settles once every refund being written has landed or failed, and at once when none is', async () => {
    const inFlight = new RefundsInFlight();
    await inFlight.settled();
    let land!: () => void;
    let fail!: (error: Error) => void;
    const landing = inFlight.track(new Promise<void>((resolve) => (land = resolve)));
    const failing = inFlight.track(new Promise<void>((_, reject) => (fail = reject)));
    failing.catch(() => undefined);
    let settled = false;
    const done = inFlight.settled().then(() => (settled = true));

    land();
    await landing;
    await Promise.resolve();
    expect(settled).toBe(false);
    fail(new Error('database away'));
    await done;
    expect(settled).toBe(true);
  });
});
