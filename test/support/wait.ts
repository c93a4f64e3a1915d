/**
 * Waits for something asynchronous that the test cannot await directly (a notification from another
 * instance, a background worker, a child process): polls `condition` until it holds, or fails after
 * `timeoutMs` naming what it waited for. The answer is the condition's last value, so a poll that reads
 * rows can hand them back. Time that must *pass* (an expiry, a retry delay) is never waited for: the
 * test moves the service's Clock instead (`app.get(Clock).advance(ms)`) and runs the job itself.
 */
/** The condition did not hold in time (an error thrown by the condition itself is passed on as it is). */
export class WaitTimeout extends Error {}

/**
 * `.catch(ignoreTimeout)`: for a wait whose caller asserts what it found last, a timeout is no error
 * of its own; any other error still fails the test.
 */
export function ignoreTimeout(error: unknown): undefined {
  if (error instanceof WaitTimeout) return undefined;
  throw error;
}

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 20, what = 'the condition' } = {},
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline)
      throw new WaitTimeout(`waited ${timeoutMs} ms for ${what}: ${describe(value)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
