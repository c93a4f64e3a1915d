import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnJs, Spawned } from '../support/processes';

/** What the soak writes with `--json` (scripts/soak/report.mjs), as far as the tests read it. */
export interface SoakResult {
  totals: { attempts: number; ok: number; failed: number; tokens: number; transactions: number };
  operations: Record<string, { done: number; failed: number }>;
  faults: {
    name: string;
    error?: string;
    firstOkAfterActionMs: number | null;
    detail?: Record<string, unknown>;
    probe: { failed: number; answeredAgainMs: number | null };
  }[];
  audit: {
    tokens: { acknowledged: number; readBack: number };
    payments: { acknowledged: number; intents: number; failed: number };
    webhooks: { events: number; outOfOrder: number };
    replays: { replayed: number; matched: number };
    logs: { cli?: { problems: number } };
    failovers?: { name: string; failed: number; longestMs: number; recoveredMs: number }[];
    listening?: Record<string, boolean>;
  };
  findings: { category: string; detail: string }[];
  clean: boolean;
}

/**
 * `npm run soak` with `args` in a process of its own (printing its output when it ends); answers its exit
 * code, what it printed on stderr and its JSON result. `stop()` (for afterAll) ends a soak still running:
 * it stops its cluster on SIGTERM.
 */
export function soakRunner() {
  let soak: Spawned | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'vault-soak-test-'));
  return {
    async run(args: string[]): Promise<{ code: number | null; stderr: string; result: SoakResult }> {
      const file = join(dir, 'soak.json');
      soak = spawnJs('scripts/soak.mjs', [...args, '--json', file], {});
      const code = await soak.exited;
      process.stdout.write(`${soak.stdout()}\n${soak.stderr()}\n`);
      return { code, stderr: soak.stderr(), result: JSON.parse(readFileSync(file, 'utf8')) as SoakResult };
    },
    async stop(): Promise<void> {
      if (soak && soak.child.exitCode === null) {
        soak.child.kill('SIGTERM');
        await Promise.race([soak.exited, new Promise((resolve) => setTimeout(resolve, 60_000))]);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What every soak must show, faults or failovers: nothing lost, charged twice, out of order or unverifiable. */
export function expectNothingLost(result: SoakResult): void {
  expect(result.findings).toEqual([]);
  expect(result.clean).toBe(true);
  // A load worth auditing, every kind of operation in it.
  expect(result.totals.ok).toBeGreaterThan(1_000);
  for (const kind of ['tokenize', 'tokenize100', 'read', 'search', 'proxy', 'authorize', 'capture', 'refund'])
    expect(result.operations[kind]?.done).toBeGreaterThan(0);
  expect(result.audit.tokens.readBack).toBe(result.audit.tokens.acknowledged);
  // One PaymentIntent per acknowledged payment, but for a payment the client was told failed: one whose
  // instance was killed before its call reached Stripe has none (the auditor checks each by its id).
  const { intents, acknowledged, failed } = result.audit.payments;
  expect(intents).toBeLessThanOrEqual(acknowledged);
  expect(intents).toBeGreaterThanOrEqual(acknowledged - failed);
  expect(result.audit.webhooks.outOfOrder).toBe(0);
  expect(result.audit.replays.matched).toBe(result.audit.replays.replayed);
  expect(result.audit.logs.cli?.problems).toBe(0);
}
