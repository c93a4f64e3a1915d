import { Injectable } from '@nestjs/common';

/** Background work of this process that a shutdown must stop at a safe point (a job, a worker). */
export interface StoppableWork {
  /** Its name in the shutdown's log lines. */
  readonly name: string;
  /**
   * Takes no new work, and resolves once every step it had under way has finished, or been released by
   * `deadline` (epoch milliseconds), so that nothing stays claimed by a process that is going away. May
   * resolve with a short account of what it did (`2 deliveries finished, 1 released`).
   */
  stop(deadline: number): Promise<string | void>;
}

/**
 * Where this process stands in its shutdown, for whoever must know: the readiness check (503 from the
 * moment a shutdown begins) and the background work, registered here by the components that run it, which
 * the shutdown stops (GracefulShutdown, main.ts). Outside a server (tests, the CLI) no shutdown begins.
 */
@Injectable()
export class ShutdownState {
  private began = false;
  private readonly work: StoppableWork[] = [];
  private readonly stopping = new Set<string>();

  /** False from the moment the shutdown began: the balancer must send nothing more. */
  get ready(): boolean {
    return !this.began;
  }

  get shuttingDown(): boolean {
    return this.began;
  }

  register(work: StoppableWork): void {
    this.work.push(work);
  }

  begin(): void {
    this.began = true;
  }

  /** The registered work whose stop has not finished yet (for the line that says what was cut). */
  get stillRunning(): string[] {
    return [...this.stopping];
  }

  /**
   * Stops every registered work at once; resolves when all have stopped, with one account per work
   * (`webhook deliveries: 1 finished`), or with their names alone when they said nothing.
   */
  async stopWork(deadline: number): Promise<string[]> {
    return Promise.all(
      this.work.map(async (work) => {
        this.stopping.add(work.name);
        try {
          const account = await work.stop(deadline);
          return account ? `${work.name}: ${account}` : work.name;
        } catch (error) {
          return `${work.name}: ${error instanceof Error ? error.message : String(error)}`;
        } finally {
          this.stopping.delete(work.name);
        }
      }),
    );
  }
}
