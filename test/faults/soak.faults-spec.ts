import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnJs, Spawned } from '../support/processes';

const MINUTES = 2;

/** What the soak writes with `--json` (scripts/soak/report.mjs), as far as this test reads it. */
interface SoakResult {
  totals: { attempts: number; ok: number; failed: number; tokens: number; transactions: number };
  operations: Record<string, { done: number; failed: number }>;
  faults: { name: string; error?: string; firstOkAfterActionMs: number | null }[];
  audit: {
    tokens: { acknowledged: number; readBack: number };
    payments: { acknowledged: number; intents: number; failed: number };
    webhooks: { events: number; outOfOrder: number };
    replays: { replayed: number; matched: number };
    logs: { cli?: { problems: number } };
  };
  findings: { category: string; detail: string }[];
  clean: boolean;
}

/**
 * The soak under faults (`npm run soak`, docs/operations.md "Soak under faults") for 2 minutes: the
 * cluster under a mixed load (tokenizes of 1 and 100 cards, reads, searches, proxy requests, payments
 * captured and refunded against the Stripe fake) while an instance is killed each minute, PostgreSQL is
 * restarted once and PgBouncer once. The auditor then finds nothing: every acknowledged token readable
 * with its data, every payment one PaymentIntent (none without one), every webhook event received in
 * order per entity, every idempotent replay the first answer, the audit log verified.
 */
describe('soak under faults', () => {
  let soak: Spawned | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'vault-soak-test-'));

  afterAll(async () => {
    if (soak && soak.child.exitCode === null) {
      // The soak stops its cluster (and drops its database) on SIGTERM.
      soak.child.kill('SIGTERM');
      await Promise.race([soak.exited, new Promise((resolve) => setTimeout(resolve, 60_000))]);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    `runs ${MINUTES} minutes of load and faults, and the auditor finds nothing lost, charged twice or out of order`,
    async () => {
      const file = join(dir, 'soak.json');
      soak = spawnJs('scripts/soak.mjs', ['--minutes', String(MINUTES), '--json', file], {});
      const code = await soak.exited;
      process.stdout.write(`${soak.stdout()}\n${soak.stderr()}\n`);
      expect(soak.stderr()).not.toContain('the soak could not run');
      const result = JSON.parse(readFileSync(file, 'utf8')) as SoakResult;

      expect(result.findings).toEqual([]);
      expect(result.clean).toBe(true);
      expect(code).toBe(0);
      // The faults all happened, and the service answered after each.
      expect(result.faults.map((f) => f.name.replace(/ at .*/, ''))).toEqual([
        'SIGKILL i1',
        'PostgreSQL restart',
        'SIGKILL i2',
        'PgBouncer restart',
      ]);
      for (const fault of result.faults) {
        expect(fault.error).toBeUndefined();
        expect(fault.firstOkAfterActionMs).not.toBeNull();
      }
      // A load worth auditing, every kind of operation in it.
      expect(result.totals.ok).toBeGreaterThan(1_000);
      for (const kind of [
        'tokenize',
        'tokenize100',
        'read',
        'search',
        'proxy',
        'authorize',
        'capture',
        'refund',
      ])
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
    },
    9 * 60_000,
  );
});
