/**
 * Waits for something asynchronous that the test cannot await directly (a notification from another
 * instance, a background worker, a child process): polls `condition` until it holds, or fails after
 * `timeoutMs` naming what it waited for. The answer is the condition's last value, so a poll that reads
 * rows can hand them back. Time that must *pass* (an expiry, a retry delay) is never waited for: the
 * test moves the service's Clock instead (`app.get(Clock).advance(ms)`) and runs the job itself.
 */
type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 20, what = 'the condition' } = {},
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}: ${describe(value)}`);
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
