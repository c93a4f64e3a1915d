import { ValidationException } from '../../../common/errors/domain.exception';
import { OrchestrationErrorCode, OrchestrationException } from '../orchestration.errors';
import { ProcessorUnavailable } from '../processors/processor-calls';
import { STUCK_AFTER_MS } from './transactions.service';
import {
  TENANT,
  OTHER,
  TOKEN,
  principal,
  approved,
  setup,
  Setup,
  origin,
  body,
  claim,
  audit,
  events,
  refusedWith,
} from '../../../../test/support/transactions-fixture';

describe('TransactionsService with settlement (fakes, no database)', () => {
  describe('authorize', () => {
    it('commits the transaction processing, calls the vendor, then commits its outcome with one audit row', async () => {
      const s = setup();
      const tx = await s.creation.create(origin(), body());
      expect(tx).toMatchObject({
        status: 'authorization_succeeded',
        authorized_amount: 1200,
        intent: 'authorize',
      });
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
      expect(s.processor.authorize.mock.calls[0]).toEqual([
        expect.objectContaining({ amount: 1200, currency: 'USD', cvc: '123' }),
      ]);
      // Two changes: the row before the call, its outcome after.
      expect(s.uow.committed).toHaveLength(2);
      expect(events(s)).toEqual([
        ['transaction:created', 'processing'],
        ['transaction:updated', 'authorization_succeeded'],
      ]);
      expect(s.uow.audit).toEqual([
        {
          entityType: 'transaction',
          entityId: tx.id,
          operation: 'create',
          message: 'Transaction created: authorization_succeeded',
        },
      ]);
      expect(s.uow.committed[1].actor).toEqual(principal(TENANT));
    });

    it('forgets the CVC in the change that records the outcome; counts each status once committed', async () => {
      const s = setup();
      await s.creation.create(origin(), body());
      expect(s.forgotten).toEqual([{ change: s.uow.committed[1], tokenId: TOKEN }]);
      expect(s.metrics.transactionEntered.mock.calls).toEqual([['processing'], ['authorization_succeeded']]);
    });

    it('sends no CVC for a merchant-initiated or subsequent card-on-file payment and forgets none', async () => {
      for (const initiation of [
        { merchant_initiated: true },
        { is_subsequent_payment: true, previous_scheme_transaction_id: '123456789012345' },
      ]) {
        const s = setup();
        await s.creation.create(origin(), body({ payment_source: 'card_on_file', ...initiation }));
        expect(s.processor.authorize.mock.calls[0][0]).not.toHaveProperty('cvc');
        expect(s.forgotten).toEqual([]);
      }
    });

    it('sends the CVC with the first customer-initiated card-on-file or recurring payment, then forgets it', async () => {
      for (const paymentSource of ['card_on_file', 'recurring'] as const) {
        const s = setup();
        await s.creation.create(origin(), body({ payment_source: paymentSource }));
        expect(s.processor.authorize.mock.calls[0][0]).toHaveProperty('cvc');
        expect(s.forgotten).toEqual([{ change: s.uow.committed[1], tokenId: TOKEN }]);
      }
    });

    it('intent capture is captured at once', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      expect(tx).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 1200,
        intent_outcome: 'succeeded',
      });
    });

    it('refuses bad input by field before any change opens or any vendor is called: the body first, then the connection', async () => {
      const s = setup();
      const error = await refusedWith(
        s.creation.create(origin(), body({ currency: 'EUR', token: '00000000-0000-4000-8000-0000000000d2' })),
      );
      expect(error).toBeInstanceOf(ValidationException);
      // The body's own checks come before the rules and the connection (docs/routing.md).
      expect(Object.keys((error as ValidationException).errors!).sort()).toEqual(['token']);
      const refused = await refusedWith(s.creation.create(origin(), body({ currency: 'EUR' })));
      expect(Object.keys((refused as ValidationException).errors!).sort()).toEqual(['currency']);
      expect(s.uow.committed).toEqual([]);
      expect(s.processor.authorize).not.toHaveBeenCalled();
    });

    it('a vendor failure is an authorization_failed transaction, not an error', async () => {
      const s = setup();
      s.processor.authorize.mockRejectedValueOnce(new Error('vendor said 400'));
      const tx = await s.creation.create(origin(), body());
      expect(tx).toMatchObject({ status: 'authorization_failed', error_code: 'processor_error' });
      expect(audit(s)).toEqual(['Transaction created: authorization_failed']);
    });

    it('a challenge issues the buyer approval link with the outcome', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce({ ...approved(), outcome: 'challenge' });
      const tx = await s.creation.create(origin(), body());
      expect(tx.status).toBe('buyer_approval_pending');
      expect(tx.payment_method.approval_url).toBe('https://vault.test/approve');
      expect(s.issue).toHaveBeenCalledTimes(1);
    });
  });

  describe('idempotency: a retry never charges twice', () => {
    it('pins the transaction on the claim in the change that inserts it; the response is left to the interceptor', async () => {
      const s = setup();
      const c = claim();
      const tx = await s.creation.create(origin(TENANT, c), body());
      expect(c.pin).toHaveBeenCalledTimes(1);
      expect(c.pin.mock.calls[0]).toEqual([s.uow.committed[0], tx.id]);
      expect(c.record).not.toHaveBeenCalled();
    });

    it('a retry that took over a stale claim (resumed) answers that transaction, calling no vendor', async () => {
      const s = setup();
      const first = await s.creation.create(origin(), body());
      s.processor.authorize.mockClear();
      const changes = s.uow.committed.length;
      const retried = await s.creation.create(origin(TENANT, claim(first.id)), body());
      expect(retried).toEqual(first);
      expect(s.processor.authorize).not.toHaveBeenCalled();
      expect(s.uow.committed).toHaveLength(changes);
    });

    it('capture and refund pin their resource; a retry after the request died answers it as it stands, no 409, no second call', async () => {
      const s = setup();
      const tx = await s.creation.create(origin(), body());
      const c = claim();
      const captured = await s.service.capture(origin(TENANT, c), tx.id);
      expect(c.pin.mock.calls.map((call) => call[1])).toEqual([tx.id]);
      // The answer was never recorded (the request died): its retry takes the stale claim over.
      s.processor.capture.mockClear();
      const again = await s.service.capture(origin(TENANT, claim(tx.id)), tx.id);
      expect(again).toEqual(captured);
      expect(s.processor.capture).not.toHaveBeenCalled();

      const r = claim();
      const refund = await s.service.refund(origin(TENANT, r), tx.id, 200);
      expect(r.pin.mock.calls.map((call) => call[1])).toEqual([refund.id]);
      s.processor.refund.mockClear();
      expect(await s.service.refund(origin(TENANT, claim(refund.id)), tx.id, 200)).toEqual(refund);
      expect(s.processor.refund).not.toHaveBeenCalled();
      expect(s.refunds.rows).toHaveLength(1);
    });

    it('a pin refused (a retry took the claim over) rolls the insert back and calls no vendor', async () => {
      const s = setup();
      const c = claim();
      c.pin.mockRejectedValueOnce(new Error('taken over'));
      await expect(s.creation.create(origin(TENANT, c), body())).rejects.toThrow('taken over');
      expect(s.uow.committed).toEqual([]);
      expect(s.uow.rolledBack).toHaveLength(1);
      expect(s.processor.authorize).not.toHaveBeenCalled();
    });

    it('an outcome that cannot be written leaves the transaction processing; the job settles it once, asking, never charging', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      s.transactions.failNextApply = new Error('connection lost');
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      expect(tx).toMatchObject({ status: 'processing', intent_outcome: 'pending' });
      expect(s.uow.rolledBack).toHaveLength(1);
      // Not yet stuck: the job leaves it alone.
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_1' });
      expect(await s.settlement.settle()).toBe(1);
      expect(await s.settlement.settle()).toBe(0);
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
      expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('capture_succeeded');
      expect(audit(s).filter((m) => m.startsWith('Settled'))).toEqual([
        'Settled authorize (succeeded): capture_succeeded',
      ]);
    });
  });

  describe('an unanswered vendor is left to settlement', () => {
    it('authorize: processing, the CVC forgotten all the same, then settled by the job as the service', async () => {
      const s = setup();
      s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const tx = await s.creation.create(origin(), body());
      expect(tx.status).toBe('processing');
      expect(audit(s)).toEqual(['Processor did not answer: processing, left to settlement']);
      expect(s.forgotten.map((f) => f.tokenId)).toEqual([TOKEN]);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      s.processor.pollStatus.mockResolvedValue({ status: 'not_found' });
      expect(await s.settlement.settle()).toBe(1);
      const settled = s.uow.committed.at(-1)!;
      expect(settled.entries.map((e) => e.message)).toEqual([
        'Settled authorize (unknown to the processor): authorization_failed',
      ]);
      expect(settled.actor).toEqual({ tenantId: TENANT, applicationId: null, system: true });
    });

    it('a job that settled it while the call ran keeps its outcome; the request only logs', async () => {
      const s = setup();
      let id = '';
      s.processor.authorize.mockImplementationOnce(async () => {
        id = [...s.transactions.rows.values()][0].id;
        // The call outlasts STUCK_AFTER_MS: the job asks the vendor, which knows nothing of it yet.
        s.clock.advance(STUCK_AFTER_MS + 1_000);
        expect(await s.settlement.settle()).toBe(1);
        return approved();
      });
      const tx = await s.creation.create(origin(), body());
      expect(tx).toMatchObject({ id, status: 'authorization_failed', error_code: 'processor_timeout' });
      expect(audit(s)).toHaveLength(2);
      expect(audit(s)[0]).toBe('Settled authorize (unknown to the processor): authorization_failed');
      // The request's own change wrote its audit row and nothing else.
      expect(s.uow.committed.at(-1)!.events).toEqual([]);
    });
  });

  describe('capture, void, refund', () => {
    async function authorized(s: Setup) {
      const tx = await s.creation.create(origin(), body());
      s.uow.committed.length = 0;
      return tx;
    }

    it('captures in full: the transaction held processing while the vendor is asked, then its outcome', async () => {
      const s = setup();
      const tx = await authorized(s);
      const captured = await s.service.capture(origin(), tx.id);
      expect(captured).toMatchObject({ status: 'capture_succeeded', captured_amount: 1200 });
      expect(s.processor.capture.mock.calls[0][0]).toMatchObject({ amount: 1200, currency: 'USD' });
      expect(events(s)).toEqual([
        ['transaction:updated', 'processing'],
        ['transaction:updated', 'capture_succeeded'],
      ]);
      expect(s.uow.audit).toEqual([
        {
          entityType: 'transaction',
          entityId: tx.id,
          operation: 'update',
          message: 'Transaction capture of 1200 USD: succeeded',
        },
      ]);
    });

    it('refuses a capture past the authorized amount, and any capture of a transaction not authorized', async () => {
      const s = setup();
      const tx = await authorized(s);
      expect(await refusedWith(s.service.capture(origin(), tx.id, 5000))).toBeInstanceOf(ValidationException);
      expect(s.uow.rolledBack).toHaveLength(1);
      s.processor.authorize.mockResolvedValueOnce({
        ...approved(),
        outcome: 'declined',
        errorCode: 'declined',
      });
      const declined = await s.creation.create(origin(), body());
      const error = await refusedWith(s.service.capture(origin(), declined.id));
      expect(error).toMatchObject({ code: OrchestrationErrorCode.Conflict });
      expect(s.processor.capture).not.toHaveBeenCalled();
    });

    it('an asynchronous capture goes capture_pending and the job settles it when the vendor has', async () => {
      const s = setup();
      const tx = await authorized(s);
      s.processor.capture.mockResolvedValueOnce({ status: 'pending' });
      expect((await s.service.capture(origin(), tx.id, 700)).status).toBe('capture_pending');
      s.processor.pollStatus.mockResolvedValueOnce({ status: 'pending' });
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(5_000);
      s.processor.pollStatus.mockResolvedValueOnce({ status: 'succeeded' });
      expect(await s.settlement.settle()).toBe(1);
      expect(s.processor.pollStatus.mock.calls.at(-1)![0]).toMatchObject({
        operation: 'capture',
        amount: 700,
      });
      expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: '700',
      });
      expect(audit(s).at(-1)).toBe('Settled capture (succeeded): capture_succeeded');
    });

    it('voids an authorization; the void needs the token usable by the caller', async () => {
      const s = setup();
      const tx = await authorized(s);
      const voided = await s.service.void(origin(), tx.id);
      expect(voided.status).toBe('authorization_voided');
      expect(audit(s)).toEqual(['Transaction void: succeeded']);
      const other = await authorized(s);
      s.loadForUse.mockResolvedValueOnce(undefined);
      expect(await refusedWith(s.service.void(origin(), other.id))).toMatchObject({
        code: OrchestrationErrorCode.NotFound,
      });
      expect(s.processor.void).toHaveBeenCalledTimes(1);
    });

    it('refunds what is left of the captured amount, once; a pending refund counts as taken', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      s.uow.committed.length = 0;
      s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const pending = await s.service.refund(origin(), tx.id, 200);
      expect(pending).toMatchObject({ status: 'processing', amount: 200 });
      const rest = await s.service.refund(origin(), tx.id);
      expect(rest).toMatchObject({ status: 'succeeded', amount: 1000 });
      expect(audit(s)).toEqual([`Refund ${rest.id} of 1000 USD: succeeded`]);
      expect(await refusedWith(s.service.refund(origin(), tx.id, 1))).toMatchObject({
        code: OrchestrationErrorCode.Conflict,
        detail: 'The transaction has been refunded in full.',
      });
      expect((await s.transactions.find(TENANT, tx.id))!.refunded_amount).toBe('1000');
    });

    it('the job settles an unanswered refund once it is stuck, adding it to the refunded amount', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.creation.create(origin(), body({ intent: 'capture' }));
      s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const refund = await s.service.refund(origin(), tx.id, 300);
      s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 're_1' });
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      expect(await s.settlement.settle()).toBe(1);
      expect(await s.settlement.settle()).toBe(0);
      expect(s.processor.pollStatus.mock.calls[0][0]).toMatchObject({
        operation: 'refund',
        refundId: refund.id,
      });
      expect(audit(s).at(-1)).toBe(`Refund ${refund.id} settled: succeeded`);
      expect(s.uow.events.at(-1)).toMatchObject({
        type: 'transaction:updated',
        data: { refunded_amount: 300 },
      });
    });
  });

  describe('settlement of buyer approvals', () => {
    it('expires a challenge the buyer never answered, as the service', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce({ ...approved(), outcome: 'challenge' });
      const tx = await s.creation.create(origin(), body());
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(15 * 60_000 + 1_000);
      expect(await s.settlement.settle()).toBe(1);
      const expired = s.uow.committed.at(-1)!;
      expect(expired.entries.map((e) => e.message)).toEqual(['Buyer approval expired: authorization_failed']);
      expect(expired.actor.system).toBe(true);
      const row = (await s.transactions.find(TENANT, tx.id))!;
      expect(row).toMatchObject({ status: 'authorization_failed', error_code: 'approval_expired' });
      expect(row.approval_token).toBeNull();
    });
  });

  describe('tenant isolation as the service sees it', () => {
    it("another tenant's caller gets 404 for every operation and cannot pay with the tenant's connection or token", async () => {
      const s = setup();
      const tx = await s.creation.create(origin(), body());
      s.uow.committed.length = 0;
      for (const attempt of [
        s.service.capture(origin(OTHER), tx.id),
        s.service.void(origin(OTHER), tx.id),
        s.service.refund(origin(OTHER), tx.id),
      ]) {
        const error = await refusedWith(attempt);
        expect(error).toBeInstanceOf(OrchestrationException);
        expect(error).toMatchObject({ code: OrchestrationErrorCode.NotFound });
      }
      // Neither the token nor, once the token is its own, the connection.
      const error = await refusedWith(s.creation.create(origin(OTHER), body()));
      expect(Object.keys((error as ValidationException).errors!).sort()).toEqual(['token']);
      const ownToken = await s.loadForUse(origin().actor, TOKEN);
      s.loadForUse.mockResolvedValueOnce({ ...ownToken!, tenant_id: OTHER });
      const own = await refusedWith(s.creation.create(origin(OTHER), body()));
      expect(Object.keys((own as ValidationException).errors!).sort()).toEqual(['connection_id']);
      expect(s.uow.committed).toEqual([]);
      expect(s.processor.capture).not.toHaveBeenCalled();
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
    });

    it("the job's changes are each made for the transaction's own tenant", async () => {
      const s = setup();
      s.processor.authorize.mockRejectedValue(new ProcessorUnavailable('timeout'));
      await s.creation.create(origin(), body());
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      await s.settlement.settle();
      expect(s.uow.committed.at(-1)!.actor.tenantId).toBe(TENANT);
    });
  });
});
