import { createHash } from 'node:crypto';

/**
 * How much slower than its own CPU time this process runs right now: the wall time of a fixed piece of
 * busy work over the CPU time it took, the median of several samples. About 1 on a quiet machine; about 3
 * when the process gets a third of a core (a second `npm test` beside this one on two cores). It needs no
 * reference machine: the same work is its own yardstick.
 *
 * Measure it while this process is otherwise idle (worker threads busy would add their CPU time).
 */
export function contention(samples = 15): number {
  const ratios: number[] = [];
  for (let i = 0; i < samples; i++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    let digest = Buffer.alloc(32);
    for (let n = 0; n < 4_000; n++) digest = createHash('sha256').update(digest).digest();
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    const cpuMs = (used.user + used.system) / 1000;
    if (cpuMs > 0) ratios.push(wallMs / cpuMs);
  }
  ratios.sort((a, b) => a - b);
  return ratios.length ? ratios[Math.floor(ratios.length / 2)] : 1;
}

/** Bounds are never loosened more than this: a defect that costs ten times the bound still fails. */
const MOST = 4;

/**
 * A wall-clock bound of the timing tier, stretched by the contention measured before and after the
 * measurement (never below the bound, never more than 4 times it). The bounds are for a quiet machine;
 * the suite must also pass beside another run of itself, where every wall-clock time stretches.
 */
export class LoadBound {
  private factor = 1;

  /** Measures the machine's contention now; call it before and after the timed work. */
  sample(): number {
    const now = contention();
    this.factor = Math.min(MOST, Math.max(this.factor, now));
    return now;
  }

  /** `ms`, as the machine's contention stretches it. */
  ms(ms: number): number {
    return ms * this.factor;
  }

  describe(): string {
    return `contention x${this.factor.toFixed(2)}`;
  }
}
