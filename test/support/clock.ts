import { Clock } from '../../src/common/clock.js';

/** A clock tests move by hand. */
export class TestClock extends Clock {
  private t: number;
  constructor(start: Date | string = new Date()) {
    super();
    this.t = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  set(at: Date | string): void {
    this.t = new Date(at).getTime();
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
