import { Clock } from '../../src/common/jobs/clock';

/**
 * A clock stopped at a fixed instant: it moves only when a spec advances it, so that no outcome depends
 * on how long the machine took between two steps (a claim's timeout, a key's age, a checkpoint period).
 */
export class StoppedClock extends Clock {
  private at: number;

  constructor(private readonly start = Date.parse('2026-11-26T12:00:00.000Z')) {
    super();
    this.at = start;
  }

  override now(): Date {
    return new Date(this.at);
  }

  override advance(ms: number): void {
    this.at += ms;
  }

  override reset(): void {
    this.at = this.start;
  }
}
