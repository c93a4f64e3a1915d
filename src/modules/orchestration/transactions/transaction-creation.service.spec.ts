import fc from 'fast-check';
import {
  approved,
  body,
  candidateId,
  events as eventsOf,
  origin,
  setup,
  TENANT,
  useTransactionsDatabase,
} from '../../../../test/support/transactions-fixture';
import { ProcessorUnavailable, ProcessorUnreachable } from '../processors/processor-calls';
import type { AuthorizeRequest, AuthorizeResult } from '../processors/processor.port';
import { BREAKER_OPEN_MS } from './connection-breaker';

/** What a vendor does with one authorization, as the adapters report it. */
const BEHAVIOURS = [
  'refused', // nothing listening: ProcessorUnreachable
  'rate_limited', // HTTP 429: ProcessorUnreachable
  'soft_decline', // a generic decline
  'service_error', // a processing error the vendor stated
  'hard_decline', // insufficient funds
  'fraud', // a refusal marked as fraud
  'after_receipt', // a 5xx after the request was sent: unknown
  'timeout', // no answer in time: unknown
  'success',
  'challenge',
] as const;
type Behaviour = (typeof BEHAVIOURS)[number];

/** Behaviours after which the next candidate may be tried (nothing can have moved money). */
const MOVED_NOTHING: readonly Behaviour[] = ['refused', 'rate_limited', 'soft_decline', 'service_error'];
/** Behaviours after which the vendor may hold an authorization. */
const MAY_HOLD: readonly Behaviour[] = ['success', 'challenge', 'after_receipt', 'timeout'];

const declined = (errorCode: string): AuthorizeResult => ({
  ...approved(),
  outcome: 'declined',
  connectionTransactionId: `pi_${errorCode}`,
  schemeTransactionId: null,
  authResponseCode: '05',
  errorCode,
});

function act(behaviour: Behaviour): Promise<AuthorizeResult> {
  switch (behaviour) {
    case 'refused':
      return Promise.reject(new ProcessorUnreachable('connect ECONNREFUSED'));
    case 'rate_limited':
      return Promise.reject(new ProcessorUnreachable('429'));
    case 'soft_decline':
      return Promise.resolve(declined('declined'));
    case 'service_error':
      return Promise.resolve({ ...declined('service_error'), outcome: 'failed' });
    case 'hard_decline':
      return Promise.resolve(declined('insufficient_funds'));
    case 'fraud':
      return Promise.resolve(declined('fraudulent'));
    case 'after_receipt':
      return Promise.reject(new ProcessorUnavailable('502'));
    case 'timeout':
      return Promise.reject(new ProcessorUnavailable('time-out'));
    case 'success':
      return Promise.resolve(approved());
    case 'challenge':
      return Promise.resolve({ ...approved(), outcome: 'challenge', authResponseCode: null });
  }
}

/**
 * Runs of the property: each is a transaction written and read back on the real database (about 30 ms
 * on two loaded cores), so fewer than the 300 the in-memory fakes could afford.
 */
const RUNS = 100;

const TRANSACTION_STATUS_OF_ATTEMPT: Record<string, string[]> = {
  succeeded: ['authorization_succeeded', 'capture_succeeded'],
  declined: ['authorization_declined'],
  failed: ['authorization_failed'],
  processing: ['processing'],
  buyer_approval_pending: ['buyer_approval_pending'],
};

useTransactionsDatabase();

describe('TransactionCreationService: failover (real repositories on PGlite, fake processors)', () => {
  it('never two authorizations for one transaction: random vendor behaviours across 2 to 5 candidates', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 2, max: 5 })
          .chain((n) => fc.array(fc.constantFrom(...BEHAVIOURS), { minLength: n, maxLength: n })),
        async (behaviours) => {
          // Each run its own transaction, read by its id: the database is emptied once, not per run.
          const s = await setup({ candidates: behaviours.length, keep: true });
          const calls: { candidate: number; request: AuthorizeRequest }[] = [];
          s.candidateProcessors.forEach((processor, candidate) =>
            processor.authorize.mockImplementation((request: AuthorizeRequest) => {
              calls.push({ candidate, request });
              return act(behaviours[candidate]);
            }),
          );
          const tx = await s.creation.create(origin(), body({ connection_id: undefined }));
          const attempts = await s.attempts.list(TENANT, tx.id);

          // The candidates were tried in order, while each attempt certainly moved no money.
          const expected = behaviours.findIndex((b) => !MOVED_NOTHING.includes(b));
          const tried = expected === -1 ? behaviours.length : expected + 1;
          expect(calls.map((c) => c.candidate)).toEqual([...Array(tried).keys()]);
          // At most one vendor may hold an authorization, and nothing follows an unknown outcome.
          expect(calls.filter((c) => MAY_HOLD.includes(behaviours[c.candidate])).length).toBeLessThanOrEqual(
            1,
          );
          // Each attempt has its own number, so its own vendor reference and idempotency key.
          expect(calls.map((c) => c.request.attempt)).toEqual(calls.map((_, i) => i + 1));
          expect(new Set(calls.map((c) => c.request.reconciliationId)).size).toBe(1);

          // One attempt per call, at its candidate; the transaction is its last attempt.
          expect(attempts.map((a) => [a.number, a.connection_id])).toEqual(
            calls.map((c, i) => [i + 1, candidateId(c.candidate)]),
          );
          const last = attempts[attempts.length - 1];
          expect(tx.connection?.id).toBe(last.connection_id);
          expect(TRANSACTION_STATUS_OF_ATTEMPT[last.status]).toContain(tx.status);
          expect(tx.error_code).toBe(last.error_code);
          if (last.status !== 'processing') {
            expect(tx.auth_response_code).toBe(last.auth_response_code);
            expect(tx.connection_transaction_id).toBe(last.connection_transaction_id);
          }
          // Every attempt before the last moved no money and says why.
          for (const attempt of attempts.slice(0, -1)) {
            expect(['declined', 'failed']).toContain(attempt.status);
            expect(['declined', 'service_error', 'processor_unavailable']).toContain(attempt.error_code);
          }
          // Attempts are not events: the transaction's creation, then its outcome when one was recorded.
          const events = (await eventsOf(tx.id)).map(([type]) => type);
          expect(events).toEqual(
            last.status === 'processing'
              ? ['transaction:created']
              : ['transaction:created', 'transaction:updated'],
          );
          const unreached = behaviours[calls[calls.length - 1].candidate];
          if (unreached === 'refused' || unreached === 'rate_limited') {
            expect(tx.status).toBe('authorization_failed');
            expect(tx.error_code).toBe('processor_unavailable');
          }
          if (unreached === 'soft_decline') expect(tx.status).toBe('authorization_declined');
        },
      ),
      { numRuns: RUNS, seed: 20261127 },
    );
  });

  it('an unknown outcome is left to settlement, and settlement resolves that attempt, never starting another', async () => {
    const s = await setup({ candidates: 3 });
    s.candidateProcessors[0].authorize.mockRejectedValue(new ProcessorUnreachable('refused'));
    s.candidateProcessors[1].authorize.mockRejectedValue(new ProcessorUnavailable('502'));
    const tx = await s.creation.create(origin(), body({ connection_id: undefined }));
    expect(tx).toMatchObject({ status: 'processing', connection: { id: candidateId(1) } });
    s.candidateProcessors[1].pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_found' });
    s.clock.advance(120_000);
    await s.settlement.settle();
    const attempts = await s.attempts.list(TENANT, tx.id);
    expect(attempts.map((a) => [a.number, a.status, a.error_code])).toEqual([
      [1, 'failed', 'processor_unavailable'],
      [2, 'succeeded', null],
    ]);
    // Asked about attempt 2 at its own connection; the third candidate never called.
    expect(s.candidateProcessors[1].pollStatus.mock.calls[0][0]).toMatchObject({
      attempt: 2,
      operation: 'authorize',
    });
    expect(s.candidateProcessors[2].authorize).not.toHaveBeenCalled();
  });

  it('the breaker skips a connection whose last 5 attempts found nothing listening, for 30 s, unless it is the last', async () => {
    const s = await setup({ candidates: 2 });
    s.candidateProcessors[0].authorize.mockRejectedValue(new ProcessorUnreachable('refused'));
    for (let i = 0; i < 5; i++) await s.creation.create(origin(), body({ connection_id: undefined }));
    expect(s.candidateProcessors[0].authorize).toHaveBeenCalledTimes(5);
    const skipped = await s.creation.create(origin(), body({ connection_id: undefined }));
    expect(s.candidateProcessors[0].authorize).toHaveBeenCalledTimes(5);
    expect(skipped).toMatchObject({ status: 'authorization_succeeded', connection: { id: candidateId(1) } });
    // A skipped connection records no attempt.
    expect((await s.attempts.list(TENANT, skipped.id)).map((a) => a.connection_id)).toEqual([candidateId(1)]);
    // The last candidate is tried all the same.
    s.candidateProcessors[1].authorize.mockRejectedValue(new ProcessorUnreachable('refused'));
    s.breaker.record(candidateId(1), true, s.clock.now().getTime());
    s.clock.advance(BREAKER_OPEN_MS + 1);
    const again = await s.creation.create(origin(), body({ connection_id: undefined }));
    expect(s.candidateProcessors[0].authorize).toHaveBeenCalledTimes(6);
    expect(again.status).toBe('authorization_failed');
  });

  it('a soft decline fails over; a hard decline, a challenge and a 3-D Secure failure do not', async () => {
    for (const [first, tries] of [
      [declined('declined'), 2],
      [declined('insufficient_funds'), 1],
      [declined('lost_or_stolen'), 1],
      [{ ...approved(), outcome: 'challenge' as const }, 1],
      [{ ...declined('three_d_secure_failed'), outcome: 'failed' as const }, 1],
    ] as const) {
      const s = await setup({ candidates: 2 });
      s.candidateProcessors[0].authorize.mockResolvedValue(first);
      await s.creation.create(origin(), body({ connection_id: undefined }));
      expect(
        s.candidateProcessors[0].authorize.mock.calls.length +
          s.candidateProcessors[1].authorize.mock.calls.length,
      ).toBe(tries);
    }
  });

  it('with connection_id: that connection only, one attempt, no failover; its attempts count for the breaker', async () => {
    const s = await setup({ candidates: 2 });
    s.candidateProcessors[0].authorize.mockRejectedValue(new ProcessorUnreachable('refused'));
    const tx = await s.creation.create(origin(), body());
    expect(tx).toMatchObject({ status: 'authorization_failed', error_code: 'processor_unavailable' });
    expect(s.candidateProcessors[1].authorize).not.toHaveBeenCalled();
    expect(await s.attempts.list(TENANT, tx.id)).toHaveLength(1);
    for (let i = 0; i < 4; i++) await s.creation.create(origin(), body());
    // Five with connection_id found nothing listening: a routed payment now starts at the second.
    const routed = await s.creation.create(origin(), body({ connection_id: undefined }));
    expect(routed.connection?.id).toBe(candidateId(1));
    expect(s.candidateProcessors[0].authorize).toHaveBeenCalledTimes(5);
  });
});
