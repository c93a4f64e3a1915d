import { expectNothingLost, soakRunner } from './soak-run';

const MINUTES = 2;

/**
 * The soak under faults (`npm run soak`, docs/operations.md "Soak under faults") for 2 minutes: the
 * cluster under a mixed load (tokenizes of 1 and 100 cards, reads, searches, proxy requests, payments
 * captured and refunded against the Stripe fake) while an instance is killed each minute, PostgreSQL is
 * restarted once and PgBouncer once. The auditor then finds nothing: every acknowledged token readable
 * with its data, every payment one PaymentIntent (none without one), every webhook event received in
 * order per entity, every idempotent replay the first answer, the audit log verified.
 */
describe('soak under faults', () => {
  const soak = soakRunner();
  afterAll(() => soak.stop());

  it(
    `runs ${MINUTES} minutes of load and faults, and the auditor finds nothing lost, charged twice or out of order`,
    async () => {
      const { code, stderr, result } = await soak.run(['--minutes', String(MINUTES)]);
      expect(stderr).not.toContain('the soak could not run');
      expectNothingLost(result);
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
    },
    9 * 60_000,
  );
});
