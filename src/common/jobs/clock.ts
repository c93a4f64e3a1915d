import { Injectable } from '@nestjs/common';

/** The service's notion of now; tests replace it to move time instead of waiting. */
@Injectable()
export class Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  /** Test hook: shift the clock forward (or back) by a duration. */
  advance(ms: number): void {
    this.offsetMs += ms;
  }

  reset(): void {
    this.offsetMs = 0;
  }
}
